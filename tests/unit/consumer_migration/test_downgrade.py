"""Downgrade: the last consumer-protocol member goes and the classic members take the group back
(spec/kip848.md §7.4, §10 #41), and empty groups converting either way (§7.1), as Kafka 4.4.0 does."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.records import GroupDeleted, RebalancePrepared
from rebalance_lab.coordinator.classic.records import GroupDowngraded as ClassicGroupDowngraded
from rebalance_lab.coordinator.consumer.assignors.java_order import TimelineKeyOrder
from rebalance_lab.coordinator.consumer.migration import GroupDowngraded
from rebalance_lab.protocol.errors import ErrorCode

from .context import MixedCtx, converged, partitions

E = ErrorCode


def test_the_last_consumer_member_leaving_turns_the_group_classic_again() -> None:  # §10 #41
    ctx, c = converged()
    left = ctx.cg("A", -1)
    assert (left.error, left.member_epoch) == (E.NONE, -1)
    assert ctx.consumer.group("g") is None
    view = ctx.classic_group()
    assert (view.state, view.generation_id, view.protocol_type, view.member_ids) == \
        ("PreparingRebalance", 2, "consumer", (c,))
    member = view.member(c)
    assert member is not None and partitions(member.assignment) == {"foo": {0, 1, 2}}  # its target
    [rebalance] = ctx.records_of(RebalancePrepared)[-1:]
    assert rebalance.reason == "Downgrade group g from consumer to classic for member leaving."
    assert ctx.records_of(GroupDowngraded)[0].epoch == 2
    assert not ctx.records_of(GroupDeleted)


def test_after_a_downgrade_the_classic_member_rejoins_into_the_next_generation() -> None:
    ctx, c = converged()
    ctx.cg("A", -1)
    assert ctx.heartbeat(c, 2) is E.REBALANCE_IN_PROGRESS
    rejoined = ctx.joined(c)
    assert (rejoined.generation_id, rejoined.leader, rejoined.protocol_name) == (3, c, "range")
    assert ctx.cg("A", 2).error_message == "Group g is not a consumer group."


def test_leave_group_of_the_consumer_member_downgrades_too() -> None:
    ctx, _c = converged()
    result = ctx.leave(("A", None))
    assert result.members[0].error is E.NONE
    assert ctx.classic_group().state == "PreparingRebalance"


def test_the_consumer_member_expiring_downgrades_the_group() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(session_ms=120_000)
    ctx.cg_join("A")
    ctx.joined(c, session_ms=120_000)
    ctx.sync(c, 2)
    ctx.advance(45_000)  # A's session (group.consumer.session.timeout.ms)
    assert ctx.consumer.group("g") is None
    assert ctx.classic_group().state == "PreparingRebalance"


def test_no_downgrade_when_the_policy_only_allows_upgrades() -> None:
    ctx, c = converged("upgrade")
    ctx.cg("A", -1)
    view = ctx.consumer_group()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Assigning", 3, 2)
    assert ctx.classic.group("g") is None
    assert ctx.heartbeat(c, 2) is E.NONE  # the classic heartbeat compares with the assignment epoch


def test_no_downgrade_when_the_classic_group_would_be_too_large() -> None:
    ctx, _c = converged(classic_max_size=0)
    ctx.cg("A", -1)
    assert ctx.consumer.group("g") is not None and ctx.classic.group("g") is None


def test_the_last_member_leaving_an_all_consumer_group_leaves_it_empty() -> None:
    ctx = MixedCtx()
    ctx.cg_join("A")
    ctx.cg("A", -1)
    assert ctx.consumer_group().state == "Empty"
    assert not ctx.records_of(GroupDowngraded)


def test_a_join_group_on_an_empty_consumer_group_makes_it_classic_keeping_offsets() -> None:
    ctx = MixedCtx("disabled")
    ctx.cg_join("A")
    ctx.cg("A", -1)
    first = ctx.joined()
    assert first.error is E.MEMBER_ID_REQUIRED
    assert ctx.consumer.group("g") is None
    joined = ctx.joined(first.member_id)
    assert (joined.error, joined.generation_id, joined.leader) == (E.NONE, 1, first.member_id)
    [converted] = ctx.records_of(GroupDowngraded)
    assert converted.downgrade is None
    assert not ctx.records_of(ClassicGroupDowngraded)


def test_requests_to_an_empty_consumer_group_find_no_member() -> None:
    ctx = MixedCtx()
    ctx.cg_join("A")
    ctx.cg("A", -1)
    assert ctx.heartbeat("x", 1) is E.UNKNOWN_MEMBER_ID
    assert ctx.sync("x", 1).error is E.UNKNOWN_MEMBER_ID
    result = ctx.leave(("x", None))
    assert (result.error, result.members[0].error) == (E.NONE, E.UNKNOWN_MEMBER_ID)


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic()
    ctx.cg_join("A", instance_id="i1")
    ctx.joined(c)
    ctx.sync(c, 2)
    a = ctx.cg("A", 2, instance_id="i1")
    assert ctx.names(a.assignment) == {"foo": {3, 4, 5}}
    replacing = ctx.joined(instance="i1", owned={"foo": [3, 4, 5]})
    assert (replacing.error, replacing.generation_id, replacing.leader) == (E.NONE, 2, "")
    view = ctx.classic_group()
    assert (view.state, view.generation_id, view.protocol_name) == ("Stable", 2, "range")
    assert [r.generation for r in ctx.records_of(ClassicGroupDowngraded)] == [2]
    synced = ctx.sync(replacing.member_id, 2, instance="i1")
    assert (synced.error, partitions(synced.assignment)) == (E.NONE, {"foo": {3, 4, 5}})
    assert (ctx.heartbeat(replacing.member_id, 2, "i1"), ctx.heartbeat(c, 2)) == (E.NONE, E.NONE)


def test_the_downgraded_group_is_led_by_the_first_remaining_member_in_kafkas_member_map_order() -> None:
    ctx = MixedCtx()
    ctx.cg_join("A")
    for member_id in ("c1", "x"):  # ids a consumer group takes from classic members as they are
        assert ctx.joined(member_id).error is E.NONE
    kafka_order = [m for m in TimelineKeyOrder(["A", "c1", "x"]) if m != "A"]
    assert kafka_order == ["x", "c1"]  # not the join order
    ctx.cg("A", -1)
    assert ctx.classic_group().leader_id == "x"
