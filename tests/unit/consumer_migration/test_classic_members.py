"""Classic-protocol members inside a consumer group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers
(spec/kip848.md §7.3), as a real Kafka 4.4.0 broker answers them (broker_facts.md "migration")."""

from __future__ import annotations

import pytest

from rebalance_lab.coordinator.consumer.records import MemberFenced
from rebalance_lab.protocol.errors import ErrorCode

from .context import MixedCtx, converged, partitions

E = ErrorCode


def test_a_new_classic_member_gets_member_id_required_with_a_kafka_uuid() -> None:
    ctx, _ = converged()
    first = ctx.joined()
    assert first.error is E.MEMBER_ID_REQUIRED
    assert len(first.member_id) == 22 and not first.member_id.startswith("classic")
    assert ctx.consumer_group().member(first.member_id) is None  # nothing changed


def test_a_join_v3_without_member_id_joins_at_once_under_a_generated_id() -> None:
    ctx, _ = converged()
    joined = ctx.joined(version=3)
    assert joined.error is E.NONE and len(joined.member_id) == 22
    assert ctx.consumer_group().group_epoch == 3


def test_an_unknown_non_empty_member_id_is_taken_as_a_new_member() -> None:  # 4.4.0: no UNKNOWN_MEMBER_ID
    ctx, _ = converged()
    ctx.advance(1_000)  # past the assignment interval: the target is recomputed at once
    joined = ctx.joined("zzz")
    assert (joined.error, joined.member_id, joined.generation_id) == (E.NONE, "zzz", 3)
    member = ctx.consumer_group().member("zzz")
    assert member is not None and member.uses_classic_protocol


def test_a_join_inside_the_assignment_interval_answers_the_old_target_epoch() -> None:
    ctx, _ = converged()
    joined = ctx.joined("zzz")
    assert joined.generation_id == 2  # the epoch was bumped to 3 but no new target yet
    assert ctx.consumer_group().group_epoch == 3


def test_protocols_not_supported_by_every_classic_member_are_inconsistent() -> None:
    ctx, _ = converged()
    refused = ctx.joined(names=("roundrobin",))
    assert (refused.error, refused.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    assert ctx.joined(names=("roundrobin", "range")).error is E.MEMBER_ID_REQUIRED


def test_classic_members_cannot_join_when_the_migration_policy_is_disabled() -> None:
    ctx = MixedCtx("disabled")
    ctx.cg_join("A")
    assert ctx.joined().error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.joined(version=3).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_a_cooperative_member_keeps_its_generation_until_it_has_revoked() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(names=("cooperative-sticky", "range"))
    ctx.cg_join("A")
    rejoined = ctx.joined(c, owned={"foo": range(6)}, names=("cooperative-sticky", "range"))
    assert (rejoined.generation_id, rejoined.protocol_name) == (1, "cooperative-sticky")
    synced = ctx.sync(c, 1, protocol_name="cooperative-sticky")
    assert partitions(synced.assignment) == {"foo": {0, 1, 2}}  # without the pending revocation
    assert ctx.heartbeat(c, 1) is E.REBALANCE_IN_PROGRESS  # it must revoke
    done = ctx.joined(c, owned={"foo": [0, 1, 2]}, names=("cooperative-sticky", "range"))
    assert done.generation_id == 2
    assert ctx.heartbeat(c, 2) is E.NONE


@pytest.mark.parametrize(("generation", "name", "error"), [
    (9, "range", E.ILLEGAL_GENERATION),
    (2, "roundrobin", E.INCONSISTENT_GROUP_PROTOCOL),
])
def test_sync_group_checks_generation_then_protocol(generation: int, name: str, error: ErrorCode) -> None:
    ctx, c = converged()
    assert ctx.sync(c, generation, protocol_name=name).error is error


def test_sync_group_of_a_member_behind_the_assignment_epoch_asks_it_to_rejoin() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic()
    ctx.cg_join("A")
    assert ctx.sync(c, 1).error is E.REBALANCE_IN_PROGRESS
    assert ctx.sync(c, 1, protocol_name=None, protocol_type=None).error is E.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("who", ["nobody", "A"])
def test_sync_and_heartbeat_of_unknown_or_consumer_protocol_members_are_unknown(who: str) -> None:
    ctx, _ = converged()
    assert ctx.sync(who, 2).error is E.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(who, 2) is E.UNKNOWN_MEMBER_ID


def test_a_heartbeat_with_the_wrong_generation_is_illegal() -> None:
    ctx, c = converged()
    assert ctx.heartbeat(c, 1) is E.ILLEGAL_GENERATION


def test_leave_group_removes_classic_and_consumer_members_alike() -> None:  # 4.4.0 does not check the protocol
    ctx, c = converged()
    other = ctx.joined(version=3).member_id
    result = ctx.leave((other, None), ("nobody", None))
    assert [m.error for m in result.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert ctx.consumer_group().member(other) is None
    assert ctx.consumer_group().member(c) is not None


def test_a_member_that_never_syncs_is_fenced_after_its_rebalance_timeout() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(session_ms=30_000, rebalance_ms=3_000)
    ctx.cg_join("A", rebalance_timeout_ms=60_000)
    ctx.joined(c, session_ms=30_000, rebalance_ms=3_000)
    ctx.advance(2_999)
    assert ctx.consumer_group().member(c) is not None
    ctx.advance(1)
    assert ctx.consumer_group().member(c) is None
    [fenced] = ctx.records_of(MemberFenced)
    assert fenced.reason == "the member failed to sync within timeout"


def test_a_member_told_to_rejoin_that_does_not_is_fenced_after_its_rebalance_timeout() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(session_ms=30_000, rebalance_ms=3_000)
    ctx.cg_join("A", rebalance_timeout_ms=60_000)
    assert ctx.heartbeat(c, 1) is E.REBALANCE_IN_PROGRESS
    ctx.advance(1_000)
    assert ctx.heartbeat(c, 1) is E.REBALANCE_IN_PROGRESS  # the running join timer keeps its deadline
    ctx.advance(2_000)
    assert ctx.consumer_group().member(c) is None
    assert ctx.records_of(MemberFenced)[0].reason == "the classic member failed to join within the rebalance timeout"


def test_syncing_stops_the_sync_timer_and_rejoining_the_join_timer() -> None:
    ctx = MixedCtx()
    c = ctx.stable_classic(session_ms=30_000, rebalance_ms=3_000)
    ctx.cg_join("A", rebalance_timeout_ms=60_000)
    ctx.heartbeat(c, 1)
    ctx.joined(c, session_ms=30_000, rebalance_ms=3_000)
    ctx.sync(c, 2)
    ctx.advance(10_000)
    assert ctx.consumer_group().member(c) is not None
