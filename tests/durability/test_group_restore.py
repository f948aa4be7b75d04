"""Groups written to ``__consumer_offsets-0`` and loaded back, as Kafka's coordinator loads them.

Classic groups: the last group metadata record (written when a generation's assignment is stored or
the group empties) comes back in Stable with its generation, protocol, leader, static and dynamic
members and assignments, and every member must heartbeat within its session timeout from the load
(``GroupMetadataManager.onLoaded`` reschedules the heartbeats). KIP-848 groups are rebuilt from their
records; continuing the restored group gives the same answers as continuing the original.
"""

from __future__ import annotations

from pathlib import Path

from rebalance_lab.coordinator.classic.records import MemberExpired
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.consumer.records import MemberFenced
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.offsets import CommittedOffset
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.storage.groups import GroupStore
from rebalance_lab.storage.segments import FlushPolicy
from tests.unit.consumer.context import Ctx, foo
from tests.unit.coordinator.group_context import GroupContext

NEVER = FlushPolicy()
SESSION_MS = 5_000


class PersistingContext(GroupContext):
    """The classic test context, with every record also handed to a group store as the server does."""

    def __init__(self, store: GroupStore) -> None:
        super().__init__(delay_ms=0)
        self.store = store

    def _apply(self, fx: Effects) -> None:
        super()._apply(fx)
        for record in fx.records:
            self.store.group_record(self.coordinator.group, record)


def _store(directory: Path) -> GroupStore:
    store = GroupStore(directory, NEVER)
    store.read()
    return store


def _restarted(directory: Path, now_ms: int, max_size: int = 2_147_483_647) -> GroupContext:
    """A fresh coordinator loaded from the directory at ``now_ms`` (the process was killed before)."""
    state = GroupStore(directory, NEVER).read()
    ctx = GroupContext(delay_ms=0, max_size=max_size)
    ctx.now = now_ms
    for view in state.classic.values():
        ctx._apply(ctx.coordinator.load_group(now_ms, view))
    return ctx


def test_a_stable_classic_group_comes_back_with_its_generation_leader_members_and_assignments(tmp_path: Path) -> None:
    ctx = PersistingContext(_store(tmp_path))
    static = ctx.stable_group(2, static=True, session_ms=SESSION_MS)
    dynamic = ctx.stable_group(2, group="dyn", session_ms=SESSION_MS)
    before, before_dynamic = ctx.view(), ctx.view("dyn")
    ctx.store.close()

    again = _restarted(tmp_path, ctx.now + 1_000)
    after = again.view()
    assert (after.state, after.generation_id, after.protocol_type, after.protocol_name, after.leader_id) == (
        "Stable", before.generation_id, "consumer", "range", static[0])
    def stored(view: GroupView) -> list[tuple[object, ...]]:
        return [(m.member_id, m.group_instance_id, m.assignment, m.protocols, m.session_timeout_ms)
                for m in view.members]

    assert stored(after) == stored(before)
    assert [m.assignment for m in again.view("dyn").members] == [m.assignment for m in before_dynamic.members]
    assert again.heartbeat(static[1], before.generation_id, instance="instance-1") is ErrorCode.NONE
    assert again.heartbeat(dynamic[0], before_dynamic.generation_id, group="dyn") is ErrorCode.NONE


def test_loaded_members_must_heartbeat_within_their_session_timeout_from_the_load(tmp_path: Path) -> None:
    ctx = PersistingContext(_store(tmp_path))
    ids = ctx.stable_group(2, session_ms=SESSION_MS)
    ctx.store.close()
    again = _restarted(tmp_path, ctx.now + 60_000)  # far beyond the session timeout since the last heartbeat
    assert again.state() == "Stable"  # the load itself expires nobody
    again.sleep(SESSION_MS - 1)
    assert again.heartbeat(ids[0], 1) is ErrorCode.NONE
    again.sleep(1)  # ids[1] never heartbeated since the load
    assert [r.member_id for r in again.records_of(MemberExpired)] == [ids[1]]
    assert again.state() == "PreparingRebalance"


def test_a_rebalance_in_progress_at_the_crash_comes_back_as_the_last_stored_generation(tmp_path: Path) -> None:
    ctx = PersistingContext(_store(tmp_path))
    ids = ctx.stable_group(2, session_ms=SESSION_MS)
    ctx.join(ids[0], version=3, session_ms=SESSION_MS)  # a rejoin: PreparingRebalance, nothing stored yet
    assert ctx.state() == "PreparingRebalance"
    ctx.store.close()
    after = _restarted(tmp_path, ctx.now).view()
    assert (after.state, after.generation_id, after.leader_id, set(after.member_ids)) == ("Stable", 1, ids[0], set(ids))


def test_an_emptied_group_comes_back_empty_and_a_deleted_one_not_at_all(tmp_path: Path) -> None:
    ctx = PersistingContext(_store(tmp_path))
    ctx.stable_group(1, session_ms=SESSION_MS, group="gone")
    ids = ctx.stable_group(1, session_ms=SESSION_MS)
    ctx.sleep(SESSION_MS)  # both members expire: each group empties (a new generation, no members)
    assert ctx.delete("gone") == {"gone": ErrorCode.NONE}
    ctx.store.close()
    again = _restarted(tmp_path, ctx.now)
    assert again.coordinator.group("gone") is None
    after = again.view()
    assert (after.state, after.generation_id, after.members) == ("Empty", 2, ())
    assert ids


# -- KIP-848 consumer groups -----------------------------------------------------------------------------


def _consumer_restarted(directory: Path, ctx: Ctx) -> Ctx:
    store = GroupStore(directory, NEVER)
    store.read()
    for record in ctx.records:
        store.group_record(lambda _group: None, record)
    store.close()
    state = GroupStore(directory, NEVER).read()
    again = Ctx()
    again.now = ctx.now
    again.coordinator.load(again.now, [r for rs in state.consumer.values() for r in rs])
    return again


def test_a_consumer_group_is_rebuilt_from_its_records_and_continues_as_the_original(tmp_path: Path) -> None:
    ctx = Ctx()
    ctx.hand_over()
    again = _consumer_restarted(tmp_path, ctx)
    assert again.view() == ctx.view()
    assert again.hb("B", 3) == ctx.hb("B", 3)  # B now gets foo[3-5] in both
    assert again.member("B").assigned == ctx.member("B").assigned
    assert ctx.names(again.member("B").assigned) == foo(3, 4, 5)


def test_loaded_consumer_members_get_a_session_timeout_and_a_revoking_member_its_rebalance_timeout(
        tmp_path: Path) -> None:
    ctx = Ctx()
    ctx.join("A", rebalance_timeout_ms=10_000)
    ctx.advance(1_000)
    ctx.join("B", rebalance_timeout_ms=10_000)
    ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5))  # A learns it must revoke foo[3-5]
    again = _consumer_restarted(tmp_path, ctx)
    assert again.member("A").state == ctx.member("A").state == "UNREVOKED_PARTITIONS"
    fenced = [r for r in again.advance(10_000) if isinstance(r, MemberFenced)]
    assert [(r.member_id, r.reason_code) for r in fenced] == [("A", "rebalance_timeout")]
    later = [r for r in again.advance(45_000) if isinstance(r, MemberFenced)]
    assert [(r.member_id, r.reason_code) for r in later] == [("B", "session_timeout")]


def test_the_group_log_is_compacted_while_serving_once_it_outgrows_its_live_state(tmp_path: Path) -> None:
    store = GroupStore(tmp_path, NEVER, compaction_bytes=4_000)
    store.read()
    for offset in range(1_000):  # one partition committed a thousand times: one live offset
        store.offset_changed("g", ("t", offset % 2), CommittedOffset(offset, -1, "", offset, None))
    store.offset_changed("gone", ("t", 0), CommittedOffset(1, -1, "", 1, None))
    store.offset_changed("gone", ("t", 0), None)
    store.close()
    assert sum(p.stat().st_size for p in tmp_path.glob("*.log")) < 8_000  # not ~100 KB of old commits
    state = GroupStore(tmp_path, NEVER).read()
    assert {k: v.offset for k, v in state.offsets.items()} == {("g", "t", 0): 998, ("g", "t", 1): 999}


def test_a_group_loaded_over_a_lowered_group_max_size_rebalances(tmp_path: Path) -> None:
    ctx = PersistingContext(_store(tmp_path))
    ctx.stable_group(3, session_ms=SESSION_MS)
    ctx.store.close()
    assert _restarted(tmp_path, ctx.now).state() == "Stable"
    assert _restarted(tmp_path, ctx.now, max_size=2).state() == "PreparingRebalance"  # onLoaded: over capacity
