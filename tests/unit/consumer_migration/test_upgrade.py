"""Online upgrade: a consumer-protocol member joins a live classic group (spec/kip848.md §7.2, §10 #40), with the
answers of a real Kafka 4.4.0 broker (broker_facts.md "migration")."""

from __future__ import annotations

import pytest

from rebalance_lab.coordinator.classic.records import GroupDeleted, GroupUpgraded
from rebalance_lab.coordinator.consumer.migration import GroupUpgraded as ConsumerGroupUpgraded
from rebalance_lab.protocol.errors import ErrorCode

from .context import MixedCtx, assignment, partitions

E = ErrorCode


def test_a_consumer_member_joining_a_stable_classic_group_converts_it_and_bumps_the_generation() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic()
    joined = ctx.cg_join("A")
    assert (joined.error, joined.member_epoch, ctx.names(joined.assignment)) == (E.NONE, 2, {})
    view = ctx.consumer_group()
    assert (view.group_epoch, view.assignment_epoch, view.state) == (2, 2, "Reconciling")
    member = view.member(c)
    assert member is not None and member.uses_classic_protocol
    assert (member.member_epoch, ctx.names(member.assigned), ctx.names(member.target)) == \
        (1, {"foo": {0, 1, 2, 3, 4, 5}}, {"foo": {0, 1, 2}})
    assert ctx.classic.group("g") is None
    assert ctx.records_of(GroupUpgraded)[0].cause == "protocol_upgrade"
    assert ctx.records_of(ConsumerGroupUpgraded)[0].epoch == 1
    assert not ctx.records_of(GroupDeleted)  # the offsets stay


def test_the_classic_member_is_told_to_rejoin_and_gets_its_server_computed_assignment() -> None:  # §10 #40
    ctx = MixedCtx()
    c = ctx.stable_classic()
    ctx.cg_join("A")
    assert ctx.heartbeat(c, 1) is E.REBALANCE_IN_PROGRESS
    rejoined = ctx.joined(c)  # eager: it revoked everything, owns nothing
    assert (rejoined.error, rejoined.generation_id, rejoined.protocol_type, rejoined.protocol_name) == \
        (E.NONE, 2, "consumer", "range")
    assert (rejoined.leader, rejoined.members, rejoined.skip_assignment) == ("", (), False)
    synced = ctx.sync(c, 2)
    assert (synced.error, partitions(synced.assignment)) == (E.NONE, {"foo": {0, 1, 2}})
    assert synced.assignment[:2] == b"\x00\x03"  # the version of its subscription
    assert ctx.heartbeat(c, 2) is E.NONE
    a = ctx.cg("A", 2)
    assert ctx.names(a.assignment) == {"foo": {3, 4, 5}}
    assert ctx.consumer_group().state == "Stable"


def test_parked_classic_joins_are_answered_rebalance_in_progress_by_the_upgrade() -> None:
    ctx = MixedCtx()
    ctx.stable_classic()
    parked = ctx.join(version=3)  # a second member: the rebalance waits for C to rejoin
    assert parked not in ctx.replies
    ctx.cg_join("A")
    assert ctx.replies[parked].error is E.REBALANCE_IN_PROGRESS
    assert len(ctx.consumer_group().members) == 3  # the waiting member was converted too


def test_a_group_in_completing_rebalance_converts_with_empty_assignments() -> None:
    ctx = MixedCtx()
    first = ctx.joined()
    joined = ctx.joined(first.member_id)
    assert ctx.classic_group().state == "CompletingRebalance"
    a = ctx.cg_join("A")
    got = ctx.names(a.assignment)
    assert a.member_epoch == 2 and got is not None and len(got["foo"]) == 3  # nobody owns anything yet
    member = ctx.consumer_group().member(joined.member_id)
    assert member is not None and (member.member_epoch, member.assigned) == (1, {})


def test_unknown_topics_of_a_classic_assignment_are_dropped() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic({"foo": [0], "nosuch": [0]}, topics=("foo", "nosuch"))
    ctx.cg_join("A")
    member = ctx.consumer_group().member(c)
    assert member is not None
    assert ctx.names(member.assigned) == {"foo": {0}}
    assert member.subscribed_topic_names == ("foo", "nosuch")


@pytest.mark.parametrize(("setup", "why"), [
    ({"protocol_type": "connect"}, "the group does not use the consumer embedded protocol"),
    ({"metadata": b"\x00\x01garbage"}, "the embedded consumer protocol is malformed"),
])
def test_an_upgrade_is_refused_for_a_group_that_is_not_a_plain_consumer_group(setup: dict[str, object],
                                                                             why: str) -> None:
    ctx = MixedCtx()
    first = ctx.joined(**setup)  # type: ignore[arg-type]
    joined = ctx.joined(first.member_id, **setup)
    ctx.sync(joined.member_id, 1, assignments={joined.member_id: b""}, protocol_type=None, protocol_name=None)
    refused = ctx.cg_join("A")
    assert (refused.error, refused.error_message) == \
        (E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group g to consumer group because {why}.")
    assert ctx.classic.group("g") is not None and ctx.consumer.group("g") is None


def test_an_assignment_with_custom_assignor_user_data_refuses_the_upgrade() -> None:  # 4.4.0, not in the spec
    ctx = MixedCtx()
    first = ctx.joined()
    joined = ctx.joined(first.member_id)
    ctx.sync(joined.member_id, 1, assignments={joined.member_id: assignment({"foo": [0]}, user_data=b"abc")})
    refused = ctx.cg_join("A")
    assert refused.error is E.GROUP_ID_NOT_FOUND
    assert refused.error_message == (
        "Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use. "
        "Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")


@pytest.mark.parametrize("policy", ["disabled", "downgrade", "DISABLED"])
def test_the_migration_policy_can_refuse_the_upgrade(policy: str) -> None:
    ctx = MixedCtx(policy)
    ctx.stable_classic()
    refused = ctx.cg_join("A")
    assert (refused.error, refused.error_message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to "
                                                      "consumer group because online upgrade is disabled.")


def test_a_classic_group_larger_than_the_consumer_group_maximum_is_not_upgraded() -> None:
    ctx = MixedCtx(consumer_max_size=1)
    ctx.stable_classic()
    ctx.join(version=3)  # a second member, waiting in PreparingRebalance
    refused = ctx.cg_join("A")
    assert refused.error_message == ("Cannot upgrade classic group g to consumer group because the group size "
                                     "exceeds the consumer group maximum size.")


def test_an_empty_classic_group_converts_whatever_the_policy() -> None:
    ctx = MixedCtx("disabled")
    c = ctx.stable_classic()
    ctx.leave((c, None))
    joined = ctx.cg_join("A")
    assert (joined.error, ctx.names(joined.assignment)) == (E.NONE, {"foo": {0, 1, 2, 3, 4, 5}})
    assert ctx.records_of(GroupUpgraded)[-1].cause == "empty_group_conversion"
    assert not ctx.records_of(GroupDeleted)


def test_converted_members_expire_after_their_classic_session_timeout() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(session_ms=6_000)
    ctx.cg_join("A", rebalance_timeout_ms=60_000)
    ctx.advance(5_999)
    assert ctx.consumer_group().member(c) is not None
    ctx.advance(1)
    assert ctx.consumer_group().member(c) is None
    assert ctx.consumer_group().group_epoch == 3
