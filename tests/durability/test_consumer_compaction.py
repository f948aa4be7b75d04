"""KIP-848 groups in the group log are compacted to snapshots: the log and the memory it takes stay proportional to
the live groups, not to their history, and a group folded from its snapshot is the live group (Kafka's log cleaner
keeps the latest value of each consumer group record key; ``coordinator/consumer/snapshot.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.apply import apply
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.coordinator.consumer.records import ConsumerRecord, MemberFenced
from rebalance_lab.coordinator.consumer.snapshot import snapshot
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.storage import values
from rebalance_lab.storage.groups import GroupStore
from rebalance_lab.storage.segments import FlushPolicy
from tests.unit.consumer.context import REBALANCE_TIMEOUT, Ctx
from tests.unit.consumer.test_properties import MEMBERS, Clients, Op, step
from tests.unit.consumer_migration.context import MixedCtx

NEVER = FlushPolicy()
EXTRA = ("regex", "range")  # operations beyond test_properties': a regex member, a member asking for "range"


def comparable(group: ConsumerGroup) -> dict[str, Any]:
    """Everything of a group that decides its later answers (the metadata refresh deadline is not stored: Kafka
    and the emulator both refresh at the first heartbeat after a load). Member and key orders included."""
    return {
        "epochs": (group.group_epoch, group.assignment_epoch, group.assignment_timestamp_ms, group.metadata_hash),
        "members": list(group.members.items()),
        "member_order": (list(group.member_order), group.member_order.slots()),
        "assignor_order": (list(group.assignor_order), group.assignor_order.slots()),
        "assignors": group.server_assignors,
        "target": list(group.target.items()),
        "inverted_target": group.inverted_target,
        "static": group.static_members,
        "names": {n: (c.by_name, c.by_regex) for n, c in group.subscribed_names.items()},
        "regexes": (group.subscribed_regexes, group.resolved_regexes),
        "partition_epochs": group.partition_epochs,
    }


def folded(records: list[ConsumerRecord]) -> ConsumerGroup:
    """The snapshot as the log stores it (JSON) and the loader folds it."""
    group = ConsumerGroup(records[0].group_id)
    for record in records:
        apply(group, values.decode(values.encode(record)))
    return group


def extra_step(ctx: Ctx, clients: Clients, kind: str, m: str) -> None:
    """A join with a regex, or with the range assignor (mixed assignors fill the assignor order)."""
    if m in clients.epoch:
        return
    if kind == "regex":
        r = ctx.hb(m, 0, rebalance_timeout_ms=REBALANCE_TIMEOUT, subscribed_topic_regex="fo+|ba.", topic_partitions=())
    else:
        r = ctx.join(m, ("foo", "bar"), server_assignor="range")
    if r.error == ErrorCode.NONE:
        clients._took(m, r)


ops = st.lists(st.tuples(st.sampled_from(["join", "join2", "static", "away", "hb", "ack", "leave", "wait", "grow",
                                          *EXTRA]),
                         st.sampled_from(MEMBERS), st.integers(0, 50_000)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans())
def test_folding_a_groups_snapshot_gives_the_live_group_after_any_operations(steps: list[Op], immediate: bool) -> None:
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0 if immediate else 1_000))
    clients = Clients(ctx)
    for kind, m, ms in steps:
        if kind in EXTRA:
            extra_step(ctx, clients, kind, m)
        else:
            step(ctx, clients, kind, m, ms)
        for group in ctx.coordinator._core.groups.values():  # the live groups are the coordinator's internals
            assert comparable(folded(snapshot(group))) == comparable(group)


def test_a_snapshot_holds_two_records_per_member_whatever_the_history() -> None:
    ctx = Ctx()
    ctx.stable_pair()
    for _ in range(200):  # C joins and leaves: 200 epochs of history
        ctx.join("C")
        ctx.leave("C")
    records = snapshot(ctx.coordinator._core.groups["g"])
    assert len(ctx.records) > 1_000
    assert len(records) == 2 * 2 + 3  # A and B, the group epoch, the target, the key orders


def test_a_group_with_a_classic_protocol_member_after_an_online_upgrade_folds_back_from_its_snapshot() -> None:
    ctx = MixedCtx()
    classic_member = ctx.stable_classic()
    ctx.cg_join("A")
    ctx.joined(classic_member)  # the classic member rejoins inside the consumer group
    group = ctx.consumer._core.groups["g"]
    assert group.members[classic_member].classic_member_metadata is not None
    assert comparable(folded(snapshot(group))) == comparable(group)


# -- the group log across a restart ----------------------------------------------------------------------------


def _log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*.log"))


def _churn(ctx: Ctx, store: GroupStore, rounds: int) -> None:
    """A and B stay and keep heartbeating; a third member joins, is assigned, acks and leaves, ``rounds`` times."""
    for i in range(rounds):
        other = f"C{i}"
        ctx.join(other)
        ctx.advance(1_000)
        for m in ("A", "B", other):
            ctx.hb(m, ctx.member(m).member_epoch, topic_partitions=_owned(ctx, m))
        ctx.leave(other)
        ctx.advance(1_000)
        for m in ("A", "B"):
            ctx.hb(m, ctx.member(m).member_epoch, topic_partitions=_owned(ctx, m))
        for record in ctx.last_all():
            store.group_record(lambda _g: None, record)


def _owned(ctx: Ctx, m: str) -> tuple[tuple[Any, tuple[int, ...]], ...]:
    return tuple((t, tuple(ps)) for t, ps in ctx.member(m).assigned.items())


def test_after_heavy_churn_the_group_log_and_its_memory_stay_bounded_and_members_carry_on_unfenced(
        tmp_path: Path) -> None:
    store = GroupStore(tmp_path, NEVER, compaction_bytes=16 * 1024)
    store.read()
    ctx = RecordingCtx()
    ctx.stable_pair()
    sizes = []
    for _ in range(4):
        _churn(ctx, store, 60)
        sizes.append(_log_bytes(tmp_path))
        assert sum(len(rs) for rs in store.state.consumer.values()) == 2 * 2 + 3  # in memory while serving
    written = ctx.written
    store.close()
    assert written > 2_000  # records of the churn, about 1 MB of JSON
    assert max(sizes) < 2 * 16 * 1024 + 8 * 1024  # the bound: compaction_bytes past a small compacted state
    state = GroupStore(tmp_path, NEVER).read()
    assert sum(len(rs) for rs in state.consumer.values()) == 2 * 2 + 3  # after the reload: the snapshot
    assert _log_bytes(tmp_path) < 8 * 1024

    again = Ctx()
    again.now = ctx.now
    again.coordinator.load(again.now, [r for rs in state.consumer.values() for r in rs])
    live = ctx.coordinator._core.groups["g"]
    assert comparable(again.coordinator._core.groups["g"]) == comparable(live)
    for _ in range(3):  # A and B go on at their epochs, past a session timeout from the load: nobody is fenced
        again.advance(20_000)
        for m in ("A", "B"):
            r = again.hb(m, ctx.member(m).member_epoch, topic_partitions=_owned(ctx, m))
            assert (r.error, r.member_epoch) == (ErrorCode.NONE, ctx.member(m).member_epoch)
    assert not [r for r in again.records if isinstance(r, MemberFenced)]
    assert again.view() == ctx.view()


class RecordingCtx(Ctx):
    """Ctx that also remembers which of its records the store has not been given yet."""

    def __init__(self) -> None:
        super().__init__()
        self._given = 0
        self.written = 0

    def last_all(self) -> list[Any]:
        fresh = self.records[self._given:]
        self._given = len(self.records)
        self.written += len(fresh)
        return fresh
