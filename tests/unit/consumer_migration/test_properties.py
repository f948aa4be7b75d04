"""Hypothesis: random mixes of classic (eager range) and consumer-protocol clients joining, syncing, heartbeating,
acknowledging, leaving and timing out keep the invariants of a group that changes protocol, and once every client
behaves, the partitions end up owned exactly once whichever kind of group is left."""

from __future__ import annotations

import uuid
from collections.abc import Hashable

from hypothesis import event, given, settings
from hypothesis import strategies as st

from rebalance_lab.coordinator.classic.messages import JoinGroupResult, SyncGroupResult
from rebalance_lab.coordinator.consumer.migration import GroupDowngraded, GroupUpgraded
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.consumer.context import check_group_invariants

from .context import FOO, MixedCtx, assignment, partitions

E = ErrorCode
CLASSIC = ("c1", "c2")
CONSUMER = ("A", "B")
EVERY = set(range(FOO.num_partitions))


class ClassicClient:
    """An eager consumer: it revokes everything before rejoining; the leader assigns round robin."""

    def __init__(self, ctx: MixedCtx) -> None:
        self.ctx = ctx
        self.member_id = ""
        self.generation = -1
        self.owned: set[int] = set()
        self.parked: Hashable | None = None  # a JoinGroup waiting for its answer
        self.syncing: Hashable | None = None  # a SyncGroup waiting for its answer
        self.leader_of: tuple[str, ...] = ()

    def join(self) -> None:
        if self.parked is not None or self.syncing is not None:
            return
        self.owned = set()
        first = not self.member_id
        self.parked = self.ctx.join(self.member_id, session_ms=10_000, rebalance_ms=10_000)
        self.collect()
        if first and self.member_id and self.parked is None and self.generation < 0:
            self.join()  # the second step of a KIP-394 join, at once as clients do

    def collect(self) -> None:
        """Read parked JoinGroup/SyncGroup answers once they came."""
        self._synced()
        if self.parked is None or self.parked not in self.ctx.replies:
            return
        result = self.ctx.replies[self.parked]
        assert isinstance(result, JoinGroupResult)
        self.parked = None
        if result.error in (E.MEMBER_ID_REQUIRED, E.NONE):
            self.member_id = result.member_id
        if result.error is E.NONE:
            self.generation = result.generation_id
            self.leader_of = tuple(m.member_id for m in result.members) if result.leader == result.member_id else ()
        elif result.error is not E.MEMBER_ID_REQUIRED:
            self.forget()

    def sync(self) -> None:
        if self.generation < 0 or self.parked is not None or self.syncing is not None:
            return
        plan = {m: assignment({"foo": [p for p in EVERY if p % len(self.leader_of) == i]})
                for i, m in enumerate(self.leader_of)}
        self.syncing = self.ctx.send_sync(self.member_id, self.generation, assignments=plan)
        self.collect()

    def _synced(self) -> None:
        if self.syncing is None or self.syncing not in self.ctx.replies:
            return
        result = self.ctx.replies[self.syncing]
        assert isinstance(result, SyncGroupResult)
        self.syncing = None
        if result.error is E.NONE:
            self.owned = partitions(result.assignment).get("foo", set()) if result.assignment else set()
        elif result.error is E.UNKNOWN_MEMBER_ID:
            self.forget()

    def heartbeat(self) -> ErrorCode:
        if not self.member_id or self.generation < 0:
            return E.NONE
        error = self.ctx.heartbeat(self.member_id, self.generation)
        if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            self.forget()
        elif error is E.ILLEGAL_GENERATION:
            self.generation = -1  # the Java client keeps its member id and rejoins
        return error

    def leave(self) -> None:
        if self.member_id:
            self.ctx.leave((self.member_id, None))
        self.forget()

    def forget(self) -> None:
        self.member_id, self.generation, self.owned, self.leader_of = "", -1, set(), ()


class ConsumerClient:
    def __init__(self, ctx: MixedCtx, member_id: str) -> None:
        self.ctx = ctx
        self.member_id = member_id
        self.epoch: int | None = None
        self.owned: dict[uuid.UUID, tuple[int, ...]] = {}

    def heartbeat(self) -> None:
        if self.epoch is None:
            result = self.ctx.cg_join(self.member_id)
        else:
            result = self.ctx.cg(self.member_id, self.epoch, topic_partitions=tuple(self.owned.items()))
        if result.error is not E.NONE:
            self.epoch, self.owned = None, {}  # fenced, unknown, or the group is classic again: start over
            return
        self.epoch = result.member_epoch
        if result.assignment is not None:
            self.owned = dict(result.assignment)

    def leave(self) -> None:
        if self.epoch is not None:
            self.ctx.cg(self.member_id, -1)
        self.epoch, self.owned = None, {}

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}


def check_invariants(ctx: MixedCtx) -> None:
    classic, consumer = ctx.classic.group("g"), ctx.consumer._core.groups.get("g")
    assert classic is None or consumer is None, "one group id, one group type"
    check_group_invariants(consumer)


ops = st.lists(st.tuples(st.sampled_from(["join", "sync", "hb", "leave", "wait"]),
                         st.sampled_from(CLASSIC + CONSUMER), st.integers(0, 15_000)), max_size=40)


def run(ctx: MixedCtx, classic: dict[str, ClassicClient], consumer: dict[str, ConsumerClient],
        op: tuple[str, str, int]) -> None:
    action, who, ms = op
    if action == "wait":
        ctx.advance(ms)
    elif who in classic:
        client = classic[who]
        {"join": client.join, "sync": client.sync, "hb": client.heartbeat, "leave": client.leave}[action]()
    elif action == "leave":
        consumer[who].leave()
    elif action in ("join", "hb"):
        consumer[who].heartbeat()
    for c in classic.values():
        c.collect()


def settle(ctx: MixedCtx, classic: dict[str, ClassicClient], consumer: dict[str, ConsumerClient]) -> None:
    """Everyone behaves: rejoin when told, sync after a join, heartbeat and acknowledge."""
    for _ in range(12):
        ctx.advance(1_100)  # past the assignment interval
        for client in consumer.values():
            if client.epoch is not None:
                client.heartbeat()
        for c in classic.values():
            c.collect()
            if c.parked is None and (not c.member_id or c.generation < 0 or c.heartbeat() is E.REBALANCE_IN_PROGRESS):
                c.join()
        for c in classic.values():
            c.collect()
            c.sync()
        check_invariants(ctx)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_mixed_groups_keep_their_invariants_and_end_with_every_partition_owned_once(
        steps: list[tuple[str, str, int]]) -> None:
    ctx = MixedCtx()
    classic = {name: ClassicClient(ctx) for name in CLASSIC}
    consumer = {name: ConsumerClient(ctx, name) for name in CONSUMER}
    for op in steps:
        run(ctx, classic, consumer, op)
        check_invariants(ctx)
    settle(ctx, classic, consumer)
    for kind in (GroupUpgraded, GroupDowngraded):
        if ctx.records_of(kind):
            event(kind.__name__)
    event(f"ends as a {'classic' if ctx.classic.group('g') else 'consumer'} group")
    owned = [c.owned for c in classic.values() if c.member_id] + [c.partitions() for c in consumer.values()
                                                                 if c.epoch is not None]
    if owned:
        assert sorted(p for parts in owned for p in parts) == sorted(EVERY), owned
