"""Hypothesis: random request/timer sequences keep the group model's invariants, on both flavors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import LeaveMember
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.state import GroupState

from .group_context import GroupContext

S = GroupState
REBALANCE_MS = [10_000, 4_000, 20_000]  # different timeouts: the group's kept maximum must follow them
NAMES = [("range",), ("range", "roundrobin"), ("roundrobin", "range"), ("sticky", "range")]

op = st.one_of(
    st.tuples(st.just("join_new"), st.sampled_from([3, 4, 9]), st.sampled_from([None, "i1", "i2"]),
              st.sampled_from(range(len(NAMES))), st.sampled_from(REBALANCE_MS)),
    st.tuples(st.just("rejoin"), st.integers(0, 7), st.sampled_from(range(len(NAMES))),
              st.sampled_from(REBALANCE_MS)),
    st.tuples(st.just("sync"), st.integers(0, 7)),
    st.tuples(st.just("heartbeat"), st.integers(0, 7)),
    st.tuples(st.just("leave"), st.integers(0, 7)),
    st.tuples(st.just("sleep"), st.sampled_from([1, 500, 2500, 3000, 6000, 300_000])),
)


def check_invariants(group: Group) -> None:
    """(The kept counts are checked against a scan after every step by ``GroupContext`` itself.)"""
    members = group.members.values()
    ids = {m.member_id for m in members}
    assert (group.leader_id is None) == (len(ids) == 0)
    assert group.leader_id is None or group.leader_id in ids
    assert not (group.pending_join & ids)
    for instance, member_id in group.static_members.items():
        assert group.members[member_id].group_instance_id == instance
    if group.state is S.EMPTY:
        assert not ids
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        assert ids and group.protocol_name is not None
    if group.state is not S.PREPARING_REBALANCE:
        assert all(m.awaiting_join is None for m in members)
    if group.state is not S.COMPLETING_REBALANCE:
        assert all(m.awaiting_sync is None for m in members)


def run(ctx: GroupContext, step: tuple, known: list[str],  # type: ignore[type-arg]
        names: list[tuple[str, ...]] = NAMES) -> None:
    """One random step: a new member joins, a known id (member, pending or stale) acts, or time passes."""
    kind, *args = step
    group = ctx.coordinator._core.groups.get("g")  # white-box invariants
    target = known[args[0] % len(known)] if known and kind not in ("join_new", "sleep") else None
    member = group.members.get(target) if group is not None and target is not None else None
    if kind == "join_new":
        version, instance, chosen, rebalance_ms = args
        ctx.join(version=version, instance=instance, names=names[chosen], rebalance_ms=rebalance_ms)
    elif kind == "sleep":
        ctx.sleep(args[0])
    elif target is None or group is None:
        return
    elif kind == "rejoin":
        ctx.join(target, instance=member.group_instance_id if member else None, names=names[args[1]],
                 rebalance_ms=args[2])
    elif kind == "sync":
        ctx.sync(target, group.generation_id, assignments={m: b"a" for m in group.members})
    elif kind == "heartbeat":
        ctx.heartbeat(target, group.generation_id)
    else:
        ctx.leave(LeaveMember(target))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(Flavor)), st.lists(op, max_size=40))
def test_random_sequences_keep_the_group_invariants(flavor: Flavor, steps: list[tuple]) -> None:  # type: ignore[type-arg]
    ctx = GroupContext(flavor, max_size=4)
    known: list[str] = []  # every id ever seen (members and pending), so stale ids are exercised too
    last_generation = 0
    for step in steps:
        run(ctx, step, known)
        group = ctx.coordinator._core.groups.get("g")
        if group is not None:
            known.extend(m for m in [*group.members, *sorted(group.pending_join)] if m not in known)
            check_invariants(group)
            assert group.generation_id >= last_generation
            last_generation = group.generation_id
