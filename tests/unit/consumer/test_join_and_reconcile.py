"""Joining, target assignment and reconciliation (spec/kip848.md §3-§5, §10 #1-7, #20-22, #34-36; 4.4.0)."""

from __future__ import annotations

import uuid

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.topics import TopicImage
from rebalance_lab.protocol.errors import ErrorCode

from .context import BAR, FOO, Ctx, foo, grown, kinds

RANGE = {"server_assignor": "range"}


def test_the_first_member_gets_epoch_2_and_every_partition() -> None:
    ctx = Ctx()
    r = ctx.join("A")
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.NONE, "A", 2, 5000)
    assert ctx.names(r.assignment) == foo(0, 1, 2, 3, 4, 5)
    assert kinds(ctx.last) == ["GroupCreated", "MemberJoined", "GroupEpochBumped", "TargetAssignmentComputed",
                               "MemberAssignmentChanged"]
    view = ctx.view()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Stable", 2, 2)


def test_a_second_member_waits_for_partitions_the_first_still_owns() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(1_000)
    r = ctx.join("B")
    assert (r.member_epoch, ctx.names(r.assignment)) == (3, {})
    assert ctx.member("B").state == "UNRELEASED_PARTITIONS"
    view = ctx.view()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Reconciling", 3, 3)


def test_the_owner_revokes_first_at_its_old_epoch_then_moves_on() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(1_000)
    ctx.join("B")
    r = ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5))
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, foo(0, 1, 2))
    assert ctx.member("A").state == "UNREVOKED_PARTITIONS"
    assert ctx.member("A").pending_revocation == {FOO.topic_id: (3, 4, 5)}
    r = ctx.ack("A", 2, foo(0, 1, 2))
    assert (r.member_epoch, r.assignment) == (3, None)
    assert ctx.member("A").state == "STABLE"


def test_released_partitions_reach_the_waiting_member_at_its_next_heartbeat() -> None:
    ctx = Ctx()
    ctx.stable_pair()
    assert ctx.names(ctx.hb("A", 3).assignment) is None
    assert ctx.view().state == "Stable"
    assert ctx.member("B").assigned == {FOO.topic_id: (3, 4, 5)}


def test_a_full_request_always_carries_the_assignment() -> None:
    ctx = Ctx()
    ctx.stable_pair()
    r = ctx.hb("A", 3, rebalance_timeout_ms=300_000, subscribed_topic_names=("foo",),
               topic_partitions=ctx.owned(foo(0, 1, 2)))
    assert ctx.names(r.assignment) == foo(0, 1, 2)


def test_the_previous_epoch_is_accepted_with_a_subset_of_the_assignment() -> None:
    ctx = Ctx()
    ctx.stable_pair()
    r = ctx.ack("A", 2, foo(0, 1))
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 3)


def test_a_member_rejoining_with_epoch_0_and_its_id_gets_its_assignment_back() -> None:
    """KAFKA-19233 (in 4.4.0): epoch 0 is never fenced."""
    ctx = Ctx()
    ctx.stable_pair()
    r = ctx.join("A")
    assert (r.error, r.member_epoch, ctx.names(r.assignment)) == (ErrorCode.NONE, 3, foo(0, 1, 2))


def test_inside_the_assignment_interval_the_group_keeps_its_old_target() -> None:
    """4.4.0 ``group.consumer.assignment.interval.ms`` (1000): B joins 15 ms after A's target."""
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(15)
    r = ctx.join("B")
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, {})
    view = ctx.view()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Assigning", 3, 2)
    ctx.advance(985)
    r = ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5))
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, foo(0, 1, 2))
    assert ctx.view().assignment_epoch == 3


def test_an_interval_of_zero_computes_at_every_bump() -> None:
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0))
    ctx.join("A")
    assert ctx.join("B").member_epoch == 3


def test_added_partitions_bump_the_epoch_at_the_next_heartbeat() -> None:
    """#34: foo grows to 8; the refresh is requested, the next heartbeat recomputes."""
    ctx = Ctx()
    ctx.stable_pair()
    ctx.advance(1_000)
    ctx.set_topics(grown(FOO, 8), BAR)
    assert ctx.view().group_epoch == 3
    r = ctx.hb("A", 3)
    assert (r.member_epoch, ctx.names(r.assignment)) == (4, foo(0, 1, 2, 6))
    assert ctx.names(ctx.hb("B", 3).assignment) == foo(3, 4, 5, 7)
    assert [b.reason for b in ctx.records if type(b).__name__ == "GroupEpochBumped"][-1] == "metadata_change"


def test_a_topic_created_later_is_assigned_after_the_metadata_refresh() -> None:
    """#35: a member may subscribe to a topic that does not exist yet."""
    ctx = Ctx()
    r = ctx.join("A", ["baz"])
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, {})
    baz = TopicImage(uuid.UUID(int=0xBA2), "baz", 2)
    ctx.advance(1_000)
    ctx.set_topics(FOO, BAR, baz)
    r = ctx.hb("A", 2)
    assert (r.member_epoch, ctx.names(r.assignment)) == (3, {"baz": {0, 1}})


def test_the_range_assignor_is_used_when_members_ask_for_it() -> None:
    """#36."""
    ctx = Ctx()
    ctx.hand_over(**RANGE)
    assert ctx.names(ctx.hb("B", 3).assignment) == foo(3, 4, 5)
    assert ctx.view().preferred_assignor == "range"


def test_a_change_of_the_preferred_assignor_bumps_the_epoch() -> None:
    """4.4.0 ``hasPreferredServerAssignorChanged``."""
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(1_000)
    r = ctx.hb("A", 2, server_assignor="range")
    assert r.member_epoch == 3 and ctx.view().preferred_assignor == "range"


def test_a_rack_change_is_recorded_without_a_bump() -> None:
    ctx = Ctx()
    ctx.join("A")
    r = ctx.hb("A", 2, rack_id="r1")
    assert r.member_epoch == 2 and kinds(ctx.last) == ["MemberMetadataUpdated"]
    assert ctx.member("A").rack_id == "r1"


def test_an_unchanged_heartbeat_writes_nothing() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.hb("A", 2)
    assert ctx.last == []


def test_dropping_a_topic_revokes_it_through_the_new_target() -> None:
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0))
    ctx.join("A", ["foo", "bar"])
    r = ctx.hb("A", 2, subscribed_topic_names=("foo",), topic_partitions=ctx.owned({"foo": range(6), "bar": [0, 1, 2]}))
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, foo(0, 1, 2, 3, 4, 5))
    assert ctx.member("A").pending_revocation == {BAR.topic_id: (0, 1, 2)}
    assert ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5)).member_epoch == 3


def test_dropping_a_topic_inside_the_interval_revokes_it_at_once() -> None:
    """4.4.0 ``CurrentAssignmentBuilder.updateCurrentAssignment``: no new target yet, but the member's
    unsubscribed topics go to pending revocation in the same heartbeat."""
    ctx = Ctx()
    ctx.join("A", ["foo", "bar"])
    ctx.advance(10)
    r = ctx.hb("A", 2, subscribed_topic_names=("foo",), topic_partitions=ctx.owned({"foo": range(6), "bar": [0, 1, 2]}))
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, foo(0, 1, 2, 3, 4, 5))
    member = ctx.member("A")
    assert (member.state, member.pending_revocation) == ("UNREVOKED_PARTITIONS", {BAR.topic_id: (0, 1, 2)})
    assert ctx.view().state == "Assigning"


def test_partitions_carry_the_epoch_they_were_assigned_at() -> None:
    """KIP-1251 (4.4.0): kept partitions keep their assignment epoch; new ones get the target epoch."""
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0))
    ctx.join("A", ["foo"])
    ctx.hb("A", 2, subscribed_topic_names=("foo", "bar"))
    group = ctx.coordinator._core.groups["g"]  # the epochs are not in the view
    assert group.members["A"].assigned == {FOO.topic_id: dict.fromkeys(range(6), 2),
                                           BAR.topic_id: dict.fromkeys(range(3), 3)}


def test_on_an_assignor_tie_the_range_members_plain_heartbeats_bump_the_epoch() -> None:
    """4.4.0 compares the stored preferred assignor (``TimelineHashMap`` order) with the one recomputed for the
    heartbeat (a ``HashMap`` copy where the member's own name was removed and put back): "range" and "uniform"
    share a bucket, so A's re-put moves "range" behind "uniform" and every plain heartbeat of A bumps
    (kip848_assignor_tie on a real 4.4.0 broker); B's do not."""
    ctx = Ctx()
    ctx.join("A", **RANGE)
    ctx.advance(1_000)
    ctx.join("B", server_assignor="uniform")
    epoch = ctx.view().group_epoch
    ctx.hb("B", ctx.member("B").member_epoch)
    assert ctx.view().group_epoch == epoch
    ctx.hb("A", ctx.member("A").member_epoch)
    assert ctx.view().group_epoch == epoch + 1


def test_a_regex_that_matches_nothing_does_not_bump_the_epoch() -> None:
    """``handleRegularExpressionsResult`` compares with ``ResolvedRegularExpression.EMPTY``."""
    ctx = Ctx()
    ctx.hb("A", 0, rebalance_timeout_ms=300_000, subscribed_topic_regex="late.*", topic_partitions=())
    assert kinds(ctx.advance(0)) == ["RegexResolved"]
    assert ctx.view().group_epoch == 1
