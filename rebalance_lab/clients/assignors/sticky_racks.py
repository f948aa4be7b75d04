"""Rack information for the sticky assignors (``AbstractStickyAssignor.RackInfo``, spec §5.3)."""

from __future__ import annotations

from collections.abc import Sequence

from rebalance_lab.clients.assignors.common import (
    PartitionsPerTopic,
    replica_racks,
    use_rack_aware_assignment,
)
from rebalance_lab.clients.assignors.types import GroupSubscription, TopicPartition


class RackInfo:
    """Consumer and partition racks, kept only when rack-aware logic is on.

    Unlike range, the switch is decided once over *all* consumers and partitions.
    """

    def __init__(
        self,
        ppt: PartitionsPerTopic,
        group: GroupSubscription,
        members: Sequence[str],
        prefer_rack_aware_logic: bool,
    ) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        subscriptions = group.members
        for m in members:
            rack = subscriptions[m].rack_id
            if rack:  # consumer_rack inlined: an empty rack is none
                consumers_by_rack.setdefault(rack, []).append(m)
        if not consumers_by_rack:  # what the general case below comes to without consumer racks
            self.consumer_racks: dict[str, str] = {}
            self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
            self.num_consumers_by_partition: dict[TopicPartition, int] = {}
            return
        partition_racks: dict[TopicPartition, frozenset[str]] = {}
        for topic, metas in ppt.items():
            for meta in metas:
                partition_racks[TopicPartition(topic, meta.partition)] = replica_racks(meta)
        union: set[str] = set().union(*partition_racks.values())
        on = use_rack_aware_assignment(
            frozenset(consumers_by_rack), union, partition_racks.values(), prefer_rack_aware_logic
        )
        self.consumer_racks = {c: rack for rack, cs in consumers_by_rack.items() for c in cs} if on else {}
        self.partition_racks = partition_racks if on else {}
        # Computed whenever some consumer has a rack, even with rack logic off (then all
        # values are equal or zero and the stable sort below changes nothing).
        self.num_consumers_by_partition = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in racks) for tp, racks in partition_racks.items()
        }

    @property
    def enabled(self) -> bool:
        return bool(self.consumer_racks)

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        """The consumer has a rack and the partition has no replica there (or no rack info)."""
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        racks = self.partition_racks.get(tp)
        return racks is None or rack not in racks

    def sort_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Stable sort by how many consumers share a rack with the partition (fewest first)."""
        if not self.num_consumers_by_partition:
            return partitions
        counts = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: list[str], first: int) -> int:
        """Index of the first consumer on one of the partition's racks, scanning circularly
        from ``first``; -1 if none (or the partition has no rack info)."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1
