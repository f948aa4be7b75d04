"""Hypothesis: random joins, heartbeats, acks, leaves, topic growth and timeouts keep the group's invariants,
and every member reconciles once all of them ack."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.messages import HeartbeatResult
from rebalance_lab.protocol.errors import ErrorCode

from .context import BAR, Ctx, check_group_invariants, grown

MEMBERS = ("A", "B", "C", "D")
Op = tuple[str, str, int]


class Clients:
    """What each client believes: its epoch and the partitions it owns (it revokes at once)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.epoch: dict[str, int] = {}
        self.owned: dict[str, dict[uuid.UUID, tuple[int, ...]]] = {}

    def join(self, m: str, topics: tuple[str, ...], instance: str | None = None) -> None:
        r = self.ctx.join(m, topics, instance_id=instance)
        if r.error == ErrorCode.UNRELEASED_INSTANCE_ID:
            return  # the instance is still held (by this member, active): a client retries later
        self._took(m, r)

    def temporary_leave(self, m: str) -> None:
        """A static member's -2: it keeps its partitions on the coordinator, the client drops them."""
        if m in self.epoch and self.ctx.member(m).instance_id is not None:
            assert self.ctx.leave(m, -2, instance_id=self.ctx.member(m).instance_id).error == ErrorCode.NONE
            self.forget(m)

    def heartbeat(self, m: str, ack: bool) -> None:
        if m not in self.epoch:
            return
        owned = tuple(self.owned[m].items()) if ack else None
        self._took(m, self.ctx.hb(m, self.epoch[m], topic_partitions=owned))

    def leave(self, m: str) -> None:
        if m in self.epoch:
            self.ctx.leave(m, -1)
            self.forget(m)

    def _took(self, m: str, r: HeartbeatResult) -> None:
        error = r.error
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
            self.forget(m)  # the Java client drops its partitions and rejoins with epoch 0 later
            return
        assert error == ErrorCode.NONE, r
        self.epoch[m] = r.member_epoch
        assignment = r.assignment
        if assignment is not None:
            self.owned[m] = dict(assignment)

    def forget(self, m: str) -> None:
        self.epoch.pop(m, None)
        self.owned.pop(m, None)


ops = st.lists(st.tuples(st.sampled_from(["join", "join2", "static", "away", "hb", "ack", "leave", "wait", "grow"]),
                         st.sampled_from(MEMBERS), st.integers(0, 50_000)), max_size=40)


def check_invariants(ctx: Ctx) -> None:
    check_group_invariants(ctx.coordinator._core.groups.get("g"))  # the invariants are about internal state


def converge(ctx: Ctx, clients: Clients) -> None:
    """Static members that left with -2 come back; then every member heartbeats, acking what it owns."""
    for member in ctx.view().members:
        if member.member_epoch == -2:
            clients.join(member.member_id, member.subscribed_topic_names, member.instance_id)
    ctx.advance(1_000)  # past the assignment interval
    for _ in range(6):
        for m in list(clients.epoch):
            clients.heartbeat(m, ack=True)
    view = ctx.view()
    assert view.state in ("Stable", "Empty"), view
    for member in view.members:
        assert member.assigned == member.target and member.pending_revocation == {}


JOINS = {"join": (("foo",), None), "join2": (("foo", "bar"), None), "static": (("foo",), "i-")}


def step(ctx: Ctx, clients: Clients, kind: str, m: str, ms: int) -> None:
    if kind in JOINS and m not in clients.epoch:
        topics, instance = JOINS[kind]
        clients.join(m, topics, None if instance is None else instance + m)
    elif kind == "away":
        clients.temporary_leave(m)
    elif kind in ("hb", "ack"):
        clients.heartbeat(m, ack=kind == "ack")
    elif kind == "leave":
        clients.leave(m)
    elif kind == "wait":
        for record in ctx.advance(ms):
            gone = getattr(record, "member_id", None)
            if type(record).__name__ == "MemberFenced" and gone is not None:
                clients.forget(gone)
    elif kind == "grow":
        current = ctx.topics.by_name["foo"]  # partitions only ever grow
        ctx.set_topics(grown(current, current.num_partitions + 1 + ms % 2), BAR)


@settings(max_examples=300, deadline=None)
@given(ops, st.booleans())
def test_random_operations_keep_the_invariants_and_all_members_reconcile(steps: list[Op], immediate: bool) -> None:
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0 if immediate else 1_000))
    clients = Clients(ctx)
    for kind, m, ms in steps:
        step(ctx, clients, kind, m, ms)
        check_invariants(ctx)
    if ctx.coordinator.group("g") is not None:
        converge(ctx, clients)
        check_invariants(ctx)
