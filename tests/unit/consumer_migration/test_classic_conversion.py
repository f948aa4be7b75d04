"""The classic side of online migration (spec/kip848.md §7; Kafka 4.4.0 ``convertToConsumerGroup``,
``ClassicGroup.fromConsumerGroup``), on the classic test context's manual clock."""

from __future__ import annotations

from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.coordinator.classic.conversion import Downgrade, DowngradedMember
from rebalance_lab.coordinator.classic.messages import LeaveMember, ProtocolEntry
from rebalance_lab.coordinator.classic.records import GroupDeleted, GroupDowngraded, GroupUpgraded
from rebalance_lab.protocol.consumer_protocol import decode_assignment, encode_subscription
from rebalance_lab.protocol.errors import ErrorCode

from ..coordinator.group_context import GroupContext

E = ErrorCode


def subscription(version: int, *topics: str) -> bytes:
    return encode_subscription(Subscription(topics=topics), version)


def downgraded(member_id: str, target: tuple[tuple[str, tuple[int, ...]], ...], *, version: int = 3,
               names: tuple[str, ...] = ("range",), instance: str | None = None) -> DowngradedMember:
    protos = tuple(ProtocolEntry(n, subscription(version, "foo")) for n in names)
    return DowngradedMember(member_id, instance, "client", "/127.0.0.1", 6_000, 20_000, protos, target)


def test_group_kind_tells_empty_from_live_and_absent_groups() -> None:
    ctx = GroupContext()
    assert ctx.coordinator.group_kind("g") is None
    [member] = ctx.stable_group(1)
    assert ctx.coordinator.group_kind("g") == "non-empty"
    ctx.leave(LeaveMember(member))
    assert ctx.coordinator.group_kind("g") == "empty"


def test_export_lists_every_member_with_its_protocols_timeouts_and_assignment() -> None:
    ctx = GroupContext()
    ids = ctx.stable_group(2, session_ms=7_000, rebalance_ms=9_000)
    state = ctx.coordinator.export_group("g")
    assert state is not None
    assert (state.generation_id, state.protocol_type, state.protocol_name) == (1, "consumer", "range")
    assert sorted(m.member_id for m in state.members) == sorted(ids)
    first = next(m for m in state.members if m.member_id == ids[0])
    assert (first.session_timeout_ms, first.rebalance_timeout_ms, first.assignment) == (7_000, 9_000, ids[0].encode())
    assert state.uses_consumer_protocol and state.metadata_of(first) == b"meta"


def test_upgrade_answers_parked_joins_rebalance_in_progress_and_removes_the_group_without_its_offsets() -> None:
    ctx = GroupContext()
    leader, _follower = ctx.stable_group(2)
    parked = ctx.join(leader)  # the leader rejoins: PreparingRebalance, its join parks
    assert not parked.done
    ctx._apply(ctx.coordinator.convert_out(ctx.now, "g"))
    assert (parked.error, parked.result.member_id) == (E.REBALANCE_IN_PROGRESS, leader)
    assert ctx.coordinator.group("g") is None
    assert ctx.coordinator.next_deadline() is None  # its heartbeat and join timers are gone
    [upgraded] = ctx.records_of(GroupUpgraded)
    assert (upgraded.generation, upgraded.cause) == (1, "protocol_upgrade")
    assert not ctx.records_of(GroupDeleted)  # the offsets service deletes offsets on GroupDeleted only


def test_upgrade_answers_parked_syncs_rebalance_in_progress() -> None:
    ctx = GroupContext()
    _leader, follower = ctx.completing_group(2)
    parked = ctx.sync(follower, 1)
    ctx._apply(ctx.coordinator.convert_out(ctx.now, "g"))
    assert parked.error is E.REBALANCE_IN_PROGRESS


def test_an_empty_group_converts_as_an_empty_group_conversion() -> None:
    ctx = GroupContext()
    [member] = ctx.stable_group(1)
    ctx.leave(LeaveMember(member))
    ctx._apply(ctx.coordinator.convert_out(ctx.now, "g"))
    assert ctx.coordinator.group("g") is None
    assert ctx.records_of(GroupUpgraded)[-1].cause == "empty_group_conversion"


def test_downgrade_builds_a_stable_group_at_the_consumer_epoch_with_target_assignments() -> None:
    ctx = GroupContext()
    down = Downgrade("g", 7, (downgraded("c1", (("foo", (0, 1, 2)),), version=1),
                              downgraded("c2", (("foo", (3, 4, 5)),))), None)
    ctx._apply(ctx.coordinator.adopt(ctx.now, down))
    view = ctx.view()
    assert (view.state, view.generation_id, view.protocol_type, view.protocol_name, view.leader_id) == \
        ("Stable", 7, "consumer", "range", "c1")
    c1 = view.member("c1")
    assert c1 is not None and c1.assignment[:2] == b"\x00\x01"  # the version of c1's subscription
    assert decode_assignment(c1.assignment).partitions == tuple(TopicPartition("foo", p) for p in (0, 1, 2))
    assert ctx.records_of(GroupDowngraded)[0].generation == 7
    assert ctx.heartbeat("c2", 7) is E.NONE


def test_downgrade_for_a_leaving_member_starts_a_rebalance_that_completes_when_everyone_rejoins() -> None:
    ctx = GroupContext()
    reason = "Downgrade group g from consumer to classic for member leaving."
    ctx._apply(ctx.coordinator.adopt(ctx.now, Downgrade("g", 5, (downgraded("c1", ()),), reason)))
    assert ctx.state() == "PreparingRebalance"
    assert ctx.heartbeat("c1", 5) is E.REBALANCE_IN_PROGRESS
    rejoin = ctx.join("c1", protos=(ProtocolEntry("range", subscription(3, "foo")),))
    assert (rejoin.error, rejoin.result.generation_id, rejoin.result.leader) == (E.NONE, 6, "c1")


def test_downgraded_members_expire_after_their_classic_session_timeout() -> None:
    ctx = GroupContext()
    ctx._apply(ctx.coordinator.adopt(ctx.now, Downgrade("g", 5, (downgraded("c1", ()), downgraded("c2", ())),
                                                        None)))
    ctx.sleep(5_000)
    assert ctx.heartbeat("c1", 5) is E.NONE
    ctx.sleep(1_000)  # c2's 6 s session is over; c1 heartbeated at 5 s
    assert ctx.view().member("c2") is None


def test_downgrade_votes_the_protocol_every_member_supports() -> None:
    ctx = GroupContext()
    down = Downgrade("g", 3, (downgraded("c1", (), names=("cooperative-sticky", "range")),
                              downgraded("c2", (), names=("range", "cooperative-sticky"))), None)
    ctx._apply(ctx.coordinator.adopt(ctx.now, down))
    assert ctx.view().protocol_name == "range"  # Java HashMap tie-break: range before cooperative-sticky
