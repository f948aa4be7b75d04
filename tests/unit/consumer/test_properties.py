"""Hypothesis: random joins, heartbeats, acks, leaves, topic growth and timeouts keep the group's invariants,
and every member reconciles once all of them ack."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.messages import HeartbeatResult
from rebalance_lab.protocol.errors import ErrorCode

from .context import BAR, Ctx, grown

MEMBERS = ("A", "B", "C", "D")
Op = tuple[str, str, int]


class Clients:
    """What each client believes: its epoch and the partitions it owns (it revokes at once)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.epoch: dict[str, int] = {}
        self.owned: dict[str, dict[uuid.UUID, tuple[int, ...]]] = {}

    def join(self, m: str, topics: tuple[str, ...]) -> None:
        self._took(m, self.ctx.join(m, topics))

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


ops = st.lists(st.tuples(st.sampled_from(["join", "join2", "hb", "ack", "leave", "wait", "grow"]),
                         st.sampled_from(MEMBERS), st.integers(0, 50_000)), max_size=40)


def check_invariants(ctx: Ctx) -> None:
    group = ctx.coordinator._core.groups.get("g")  # the invariants are about internal state
    if group is None:
        return
    holders: dict[tuple[uuid.UUID, int], str] = {}
    for member in group.members.values():
        for source in (member.assigned, member.pending_revocation):
            for topic_id, partitions in source.items():
                for p in partitions:
                    assert holders.setdefault((topic_id, p), member.member_id) == member.member_id, (topic_id, p)
        assert member.member_epoch <= group.assignment_epoch
    assert group.assignment_epoch <= group.group_epoch


def converge(ctx: Ctx, clients: Clients) -> None:
    ctx.advance(1_000)  # past the assignment interval
    for _ in range(6):
        for m in list(clients.epoch):
            clients.heartbeat(m, ack=True)
    view = ctx.view()
    assert view.state in ("Stable", "Empty"), view
    for member in view.members:
        assert member.assigned == member.target and member.pending_revocation == {}


@settings(max_examples=150, deadline=None)
@given(ops, st.booleans())
def test_random_operations_keep_the_invariants_and_all_members_reconcile(steps: list[Op], immediate: bool) -> None:
    ctx = Ctx(ConsumerGroupConfig(assignment_interval_ms=0 if immediate else 1_000))
    clients = Clients(ctx)
    for kind, m, ms in steps:
        if kind == "join" and m not in clients.epoch:
            clients.join(m, ("foo",))
        elif kind == "join2" and m not in clients.epoch:
            clients.join(m, ("foo", "bar"))
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
        check_invariants(ctx)
    if clients.epoch:
        converge(ctx, clients)
        check_invariants(ctx)
