"""The classic group keeps its member order and counts as it changes (issue 22 item 1), exactly as before.

The member map's iteration order is what clients see (the leader's member list, the next leader, vote ties):
the kept order must equal the order of a map sorted afresh after every change (the previous implementation,
kept here as the reference) and, for a map never removed from, ``java_hashmap_order`` of the insertion order.
The group's counts must equal a scan, and no follower's JoinGroup, SyncGroup or Heartbeat, nor a refused
JoinGroup, may read the member list.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.ordering import (
    OrderedMembers,
    java_capacity_after,
    java_hashmap_order,
    scala_capacity_before_insert,
    spread,
)
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext
from .test_properties import run


class SortedAfresh:
    """The reference: the map's keys in insertion order, sorted (stably) by bucket after every change."""

    def __init__(self, flavor: Flavor) -> None:
        self.scala = flavor is Flavor.KAFKA_3
        self.keys: dict[str, None] = {}
        self.capacity = 16

    def put(self, key: str) -> None:
        if key not in self.keys:
            size = len(self.keys)
            self.capacity = (scala_capacity_before_insert(size, self.capacity) if self.scala
                             else java_capacity_after(size + 1, self.capacity))
            self.keys[key] = None

    def pop(self, key: str) -> None:
        self.keys.pop(key, None)

    def order(self) -> list[str]:
        mask = self.capacity - 1
        if self.scala:
            return sorted(self.keys, key=lambda k: (spread(k) & mask, spread(k)))
        return sorted(self.keys, key=lambda k: spread(k) & mask)


# Short strings over "ABab" collide often in Java's String hash ("Aa" and "BB"), so buckets are shared.
KEYS = st.text(alphabet="ABab", min_size=1, max_size=4)
STEP = st.tuples(st.sampled_from(["put", "put", "pop"]), KEYS)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(Flavor)), st.lists(STEP, max_size=150))
def test_random_puts_and_pops_keep_the_member_order_equal_to_sorting_afresh(
        flavor: Flavor, steps: list[tuple[str, str]]) -> None:
    kept: OrderedMembers[int] = OrderedMembers(flavor)
    reference = SortedAfresh(flavor)
    for number, (action, key) in enumerate(steps):
        if action == "put":
            kept.put(key, number)
            reference.put(key)
        else:
            kept.pop(key)
            reference.pop(key)
        assert kept.keys() == reference.order()
        assert kept.first_key() == next(iter(reference.order()), None)


@settings(max_examples=100, deadline=None)
@given(st.lists(KEYS, max_size=120))
def test_a_java_member_map_only_put_to_iterates_as_a_fresh_java_hashmap(keys: list[str]) -> None:
    kept: OrderedMembers[int] = OrderedMembers(Flavor.KAFKA_4)
    for key in keys:
        kept.put(key, 0)
    assert kept.keys() == java_hashmap_order(keys)


def test_growing_past_each_resize_keeps_the_order_of_both_flavors() -> None:
    for flavor in Flavor:
        kept: OrderedMembers[int] = OrderedMembers(flavor)
        reference = SortedAfresh(flavor)
        for i in range(3000):
            key = f"consumer-{i}-{i * 7919 % 1000:04d}"
            kept.put(key, i)
            reference.put(key)
            if i % 3 == 2:  # remove + put again moves a key to the end of its bucket
                victim = f"consumer-{i - 1}-{(i - 1) * 7919 % 1000:04d}"
                kept.pop(victim)
                reference.pop(victim)
                kept.put(victim, i)
                reference.put(victim)
        assert kept.keys() == reference.order()


# -- the group: random joins, leaves, expiries and static replacements ---------------------------------------

NAMES = [("range",), ("range", "roundrobin"), ("roundrobin", "range"), ("range", "range"), ("sticky", "range")]
OP = st.one_of(
    st.tuples(st.just("join_new"), st.sampled_from([3, 9]), st.sampled_from([None, None, "i1", "i2"]),
              st.sampled_from(range(len(NAMES))), st.sampled_from([4_000, 10_000, 20_000])),
    st.tuples(st.just("rejoin"), st.integers(0, 9), st.sampled_from(range(len(NAMES))),
              st.sampled_from([4_000, 10_000])),
    st.tuples(st.just("sync"), st.integers(0, 9)),
    st.tuples(st.just("heartbeat"), st.integers(0, 9)),
    st.tuples(st.just("leave"), st.integers(0, 9)),
    st.tuples(st.just("sleep"), st.sampled_from([1, 3000, 6000, 20_000])),
)


def scanned_candidates(group: Group) -> list[str]:
    """The candidates as the previous implementation computed them: every member's names, scanned."""
    counts, size = group.protocol_counts(), len(group.members)
    names = [p.name for m in group.members.values() for p in m.protocols]
    return [n for n in dict.fromkeys(names) if counts[n] == size]


@contextmanager
def mirrored_into(reference: SortedAfresh) -> Iterator[None]:
    """Every put and pop on a member map is applied to the reference too (one group per test)."""
    put, pop = OrderedMembers.put, OrderedMembers.pop

    def mirrored_put(self: OrderedMembers[object], key: str, value: object) -> None:
        reference.put(key)
        put(self, key, value)

    def mirrored_pop(self: OrderedMembers[object], key: str) -> object:
        reference.pop(key)
        return pop(self, key)

    OrderedMembers.put, OrderedMembers.pop = mirrored_put, mirrored_pop  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        OrderedMembers.put, OrderedMembers.pop = put, pop  # type: ignore[method-assign]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(Flavor)), st.lists(OP, max_size=40))
def test_random_group_histories_keep_counts_order_and_candidates_equal_to_full_scans(
        flavor: Flavor, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    ctx = GroupContext(flavor)  # checks the kept counts and the kept order against scans after every step
    known: list[str] = []
    reference = SortedAfresh(flavor)
    with mirrored_into(reference):
        for op in ops:
            run(ctx, op, known, NAMES)
            group = ctx.coordinator._core.groups.get("g")
            if group is None:
                continue
            assert list(group.members) == reference.order()
            assert group.leader_id is None or group.leader_id in group.members
            assert group.candidates() == scanned_candidates(group)
            known.extend(m for m in [*group.members, *sorted(group.pending_join)] if m not in known)


@contextmanager
def member_list_reads() -> Iterator[list[str]]:
    """Every call that walks, copies or sorts a group's whole member list, by name."""
    calls: list[str] = []
    names = ("keys", "values", "__iter__", "_sorted", "_ordered")  # _ordered: the sort before issue 22
    saved = {name: getattr(OrderedMembers, name) for name in names if hasattr(OrderedMembers, name)}

    def counting(name: str):  # type: ignore[no-untyped-def]
        def wrapper(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(name)
            return saved[name](self, *args, **kwargs)
        return wrapper

    for name in saved:
        setattr(OrderedMembers, name, counting(name))
    try:
        yield calls
    finally:
        for name, method in saved.items():
            setattr(OrderedMembers, name, method)


@pytest.mark.parametrize("flavor", list(Flavor))
def test_no_follower_join_sync_or_heartbeat_and_no_refused_join_reads_the_member_list(
        flavor: Flavor, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = GroupContext(flavor, delay_ms=0)
    ids = ctx.stable_group(40, names=("range", "roundrobin"))
    leader = ctx.view().leader_id
    followers = [m for m in ids if m != leader]
    generation = ctx.view().generation_id
    monkeypatch.setattr(ctx.coordinator, "check_counts", lambda: None)  # the context's own scans are not counted
    with member_list_reads() as calls:
        assert ctx.heartbeat(followers[0], generation) is ErrorCode.NONE
        rejoin = ctx.join(followers[1], names=("range", "roundrobin"))  # unchanged: the current generation at once
        assert rejoin.error is ErrorCode.NONE and rejoin.result.members == ()
        assert ctx.sync(followers[1], generation).error is ErrorCode.NONE
        refused = ctx.join(followers[2], names=("sticky",))  # no common protocol
        assert refused.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        joined = ctx.join(version=3, names=("range",))  # a new member: parks, the group starts rebalancing
        assert ctx.join(followers[3], names=("range", "roundrobin")).done is False  # parked, no completion yet
    assert calls == []
    assert not joined.done and ctx.state() == "PreparingRebalance"
