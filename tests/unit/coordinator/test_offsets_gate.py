"""The group side of OffsetCommit/Fetch/Delete (spec §12, §18.10; trap §16.12; §15 #8)."""

from __future__ import annotations

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.records import GroupCreated
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


def commit(ctx: GroupContext, member: str = "", generation: int = -1, instance: str | None = None,
           version: int = 9, group: str = "g") -> ErrorCode:
    error, fx = ctx.coordinator.validate_offset_commit(ctx.now, group, member, generation, instance, version)
    ctx.records.extend(fx.records)
    return error


def test_simple_consumer_commit_creates_an_empty_group() -> None:  # 18.10 #62
    ctx = GroupContext()
    assert commit(ctx, "whatever") is E.NONE
    view = ctx.view()
    assert (view.state, view.protocol_type) == ("Empty", None)
    assert ctx.list_groups().groups[0].protocol_type == ""
    assert ctx.records_of(GroupCreated)[-1].cause == "offset_commit"


def test_java_commit_to_an_unknown_group_with_a_generation_depends_on_the_version() -> None:  # #63, §15 #8
    ctx = GroupContext(Flavor.KAFKA_4)
    assert commit(ctx, "m", 1, version=8) is E.ILLEGAL_GENERATION
    assert commit(ctx, "m", 1, version=9) is E.GROUP_ID_NOT_FOUND
    assert ctx.coordinator.group("g") is None


def test_scala_commit_to_an_unknown_group_with_a_generation_is_illegal_generation() -> None:  # §15 #8
    ctx = GroupContext(Flavor.KAFKA_3)
    assert commit(ctx, "m", 1, version=9) is E.ILLEGAL_GENERATION


def test_commit_validation_matrix() -> None:  # 18.10 #64
    ctx = GroupContext()
    [m] = ctx.completing_group(1, static=True)
    assert commit(ctx) is E.UNKNOWN_MEMBER_ID
    assert commit(ctx, "unknown", 1) is E.UNKNOWN_MEMBER_ID
    assert commit(ctx, m, 1, instance="unknown") is E.UNKNOWN_MEMBER_ID
    assert commit(ctx, m, 0, instance="instance-0") is E.ILLEGAL_GENERATION
    assert commit(ctx, m, 1, instance="instance-0") is E.REBALANCE_IN_PROGRESS
    ctx.sync(m, 1, instance="instance-0", assignments={})
    assert commit(ctx, m, 1, instance="instance-0") is E.NONE
    ctx.join(version=9, instance="instance-0")  # static replacement: m is fenced
    assert commit(ctx, m, 1, instance="instance-0") is E.FENCED_INSTANCE_ID


def test_commit_during_preparing_rebalance_is_accepted_and_resets_the_session() -> None:  # 18.10 #65
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2, session_ms=5000, rebalance_ms=60_000)
    ctx.join(leader, session_ms=5000, rebalance_ms=60_000)
    ctx.sleep(4000)
    assert commit(ctx, follower, 1) is E.NONE
    ctx.sleep(1000)  # without the reset the follower would expire now
    assert follower in ctx.view().member_ids


def test_commit_with_generation_minus_one_is_accepted_for_any_member_while_empty() -> None:  # trap 12
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    from rebalance_lab.coordinator.classic.messages import LeaveMember

    ctx.leave(LeaveMember(m))
    assert commit(ctx, "anyone", -1, instance="any") is E.NONE


def test_offset_fetch_never_fails_on_the_group_side() -> None:  # 18.10 #68
    ctx = GroupContext()
    assert ctx.coordinator.validate_offset_fetch("unknown") is E.NONE


def test_offset_delete_group_checks() -> None:  # §12.3
    ctx = GroupContext()
    assert ctx.coordinator.validate_offset_delete("unknown").error is E.GROUP_ID_NOT_FOUND
    ctx.stable_group(1, group="connect")
    core = ctx.coordinator._core
    core.groups["connect"].protocol_type = "connect"
    assert ctx.coordinator.validate_offset_delete("connect").error is E.NON_EMPTY_GROUP
    commit(ctx, group="simple")
    check = ctx.coordinator.validate_offset_delete("simple")
    assert check.error is E.NONE and not check.is_subscribed("t")


def test_offset_delete_knows_the_consumer_subscriptions() -> None:  # §12.3
    from .group_context import protocols

    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x05topic" + b"\xff\xff\xff\xff"
    ctx = GroupContext()
    call = ctx.join(version=3, protos=protocols("range", metadata=subscription))
    ctx.sleep(3000)
    ctx.sync(call.result.member_id, 1, assignments={})
    check = ctx.coordinator.validate_offset_delete("g")
    assert check.is_subscribed("topic") and not check.is_subscribed("other")
