"""``RangeAssignor`` (name ``range``), including KIP-881 rack-aware phases (spec §3)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rebalance_lab.clients.assignors.common import (
    PartitionIds,
    PartitionsPerTopic,
    consumer_rack,
    member_hash_order,
    partition_ids_of,
    replica_racks,
    sorted_member_infos,
    topic_metadata,
    topic_partition_key,
    topic_partitions,
    use_rack_aware_assignment,
    wrap,
)
from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    TopicPartition,
)

Lists = dict[str, list[TopicPartition]]


@dataclass
class _TopicState:
    """``RangeAssignor.TopicAssignmentState``: one topic's quotas and what is left."""

    topic: str
    consumers: dict[str, str | None]  # sorted by MemberInfo order, de-duplicated, -> rack
    partition_racks: dict[int, frozenset[str]]  # empty unless some consumer has a rack
    unassigned: dict[TopicPartition, None]  # ordered set, metadata order
    quota: int
    extra: int
    needs_rack_aware: bool = False
    assigned: dict[str, int] = field(default_factory=dict)

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        """A rack-less consumer matches everything; otherwise its rack must hold a replica."""
        rack = self.consumers[consumer]
        racks = self.partition_racks.get(tp.partition)
        return rack is None or (racks is not None and rack in racks)

    def max_assignable(self, consumer: str) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned[consumer])

    def on_assigned(self, consumer: str, partitions: list[TopicPartition]) -> None:
        self.count_assigned(consumer, len(partitions))
        for tp in partitions:
            self.unassigned.pop(tp, None)

    def count_assigned(self, consumer: str, count: int) -> None:
        self.assigned[consumer] += count
        # Java decrements on every call that leaves the consumer above quota; maxAssignable
        # then stays <= 0, so in practice once per consumer.
        if self.assigned[consumer] > self.quota:
            self.extra -= 1


def _topic_state(
    topic: str,
    metas: tuple[PartitionMeta, ...],
    ids: Sequence[int],
    consumers: list[str],
    racks: dict[str, str],
    prefer_rack_aware_logic: bool,
) -> _TopicState:
    count = len(consumers)
    state = _TopicState(
        topic=topic,
        consumers={c: racks.get(c) for c in consumers},
        partition_racks={},
        unassigned=dict.fromkeys(topic_partitions(topic, ids)),  # ids: the metas' partitions, in order
        quota=len(metas) // count if count else 0,
        extra=len(metas) % count if count else 0,
        assigned=dict.fromkeys(consumers, 0),
    )
    consumer_racks = {racks[c] for c in consumers if c in racks}
    if consumer_racks:
        state.partition_racks = {p.partition: replica_racks(p) for p in metas}
    union: set[str] = set().union(*state.partition_racks.values())
    state.needs_rack_aware = use_rack_aware_assignment(
        consumer_racks, union, state.partition_racks.values(), prefer_rack_aware_logic
    )
    return state


class RangeAssignor:
    """Kafka's ``org.apache.kafka.clients.consumer.RangeAssignor``.

    ``prefer_rack_aware_logic`` mirrors Java's package-private test flag
    ``preferRackAwareLogic`` (spec §2.3); production Java leaves it ``False``.
    """

    name: ClassVar[str] = "range"  # ClassVar: a class attribute when compiled (mypyc) too

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]:
        return wrap(group, self.assign_lists(cluster, group))

    def assign_lists(self, cluster: ClusterView, group: GroupSubscription) -> Lists:
        """:meth:`assign` as each member's partition list, without the ``Assignment`` wrappers."""
        members = member_hash_order(group)
        topics = topic_metadata(cluster, group, members)
        return self.assign_partitions(topics.partitions, group, members, partition_ids=topics.ids)

    def assign_partitions(
        self,
        ppt: PartitionsPerTopic,
        group: GroupSubscription,
        members: list[str],
        *,
        partition_ids: PartitionIds | None = None,
    ) -> Lists:
        """``partition_ids`` are ``ppt``'s ids if the caller has them already (read from ``ppt`` otherwise)."""
        ids = partition_ids_of(ppt) if partition_ids is None else partition_ids
        states = self._states(ppt, ids, group, members)
        lists: Lists = {m: [] for m in members}
        use_rack_aware = any(s.needs_rack_aware for s in states)
        if use_rack_aware:
            _assign_with_rack_matching(states, lists)
        for state in states:
            _assign_ranges(state, lists, rack_matching=False)
        if use_rack_aware:
            for partitions in lists.values():
                partitions.sort(key=topic_partition_key)
        return lists

    def _states(
        self, ppt: PartitionsPerTopic, ids: PartitionIds, group: GroupSubscription, members: list[str]
    ) -> list[_TopicState]:
        per_topic: dict[str, list[str]] = defaultdict(list)
        for member_id in members:  # consumersPerTopic iterates the subscriptions HashMap
            for topic in group.members[member_id].topics:
                per_topic[topic].append(member_id)
        racks = {m: r for m in members if (r := consumer_rack(group.members[m])) is not None}
        states = []
        for topic, metas in ppt.items():
            consumers = list(dict.fromkeys(sorted_member_infos(per_topic.get(topic, []), group.members)))
            states.append(_topic_state(topic, metas, ids[topic], consumers, racks, self.prefer_rack_aware_logic))
        return states


def _assign(consumer: str, partitions: list[TopicPartition], state: _TopicState, lists: Lists) -> None:
    lists[consumer].extend(partitions)
    state.on_assigned(consumer, partitions)


def _assign_ranges(state: _TopicState, lists: Lists, rack_matching: bool) -> None:
    """Walk consumers in sorted order; each takes up to ``maxAssignable`` of the remaining
    partitions (lowest first), restricted to rack matches in the rack phase."""
    if not rack_matching:
        _assign_leading(state, lists)
        return
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        chosen: list[TopicPartition] = []
        for tp in state.unassigned:
            if len(chosen) >= limit:
                break
            if state.racks_match(consumer, tp):
                chosen.append(tp)
        if chosen:
            _assign(consumer, chosen, state, lists)


def _assign_leading(state: _TopicState, lists: Lists) -> None:
    """:func:`_assign_ranges` without rack matching: every remaining partition qualifies, so each
    consumer takes the first ``maxAssignable`` (>= 0) remaining ones, a slice of one list."""
    remaining = list(state.unassigned)
    taken = 0
    for consumer in state.consumers:
        if taken == len(remaining):  # nothing unassigned
            break
        chosen = remaining[taken : taken + state.max_assignable(consumer)]
        if chosen:
            taken += len(chosen)
            lists[consumer].extend(chosen)
            state.count_assigned(consumer, len(chosen))
    if taken:
        state.unassigned = dict.fromkeys(remaining[taken:])


def _assign_with_rack_matching(states: list[_TopicState], lists: Lists) -> None:
    """Group topics by consumer map, then by number of partitions with rack info; groups of
    two or more are co-partitioned. Group order never changes results: topics are disjoint."""
    groups: dict[tuple[frozenset[tuple[str, str | None]], int], list[_TopicState]] = defaultdict(list)
    for state in states:
        groups[(frozenset(state.consumers.items()), len(state.partition_racks))].append(state)
    for (_, num_partitions), group_states in groups.items():
        if len(group_states) > 1:
            _assign_co_partitioned(num_partitions, group_states, lists)
        elif group_states[0].needs_rack_aware:
            _assign_ranges(group_states[0], lists, rack_matching=True)


def _assign_co_partitioned(num_partitions: int, states: list[_TopicState], lists: Lists) -> None:
    """For p = 0..n-1 give partition p of every topic to the first remaining consumer that
    rack-matches it in all topics and still has capacity in all of them."""
    remaining = list(states[0].consumers)
    for p in range(num_partitions):
        consumer = next(
            (
                c
                for c in remaining
                if all(s.racks_match(c, TopicPartition(s.topic, p)) and s.max_assignable(c) > 0 for s in states)
            ),
            None,
        )
        if consumer is None:
            continue
        for s in states:
            _assign(consumer, [TopicPartition(s.topic, p)], s, lists)
        if not any(s.max_assignable(consumer) > 0 for s in states):
            remaining.remove(consumer)
            if not remaining:
                break
