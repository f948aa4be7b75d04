"""Which broker coordinates a group (spec/coordinator.md §13.2-13.3).

The coordinator of a group is the leader of ``__consumer_offsets`` partition
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``.
"""

from __future__ import annotations

import functools

from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode``: 31-based over UTF-16 code units, wrapped to a signed int32."""
    data = value.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but ``Integer.MIN_VALUE`` maps to 0, not itself."""
    return 0 if n == -(1 << 31) else abs(n)


@functools.lru_cache(maxsize=4096)  # every group request asks; a heartbeat path must not rehash the id each time
def partition_for(group_id: str, num_partitions: int) -> int:
    return java_utils_abs(java_string_hash(group_id)) % num_partitions


def coordinator_for(world: World, group_id: str) -> BrokerInfo | None:
    """The broker leading the group's offsets partition (the topic is created on first use);
    None while that partition has no live leader (clients then get COORDINATOR_NOT_AVAILABLE)."""
    # .get, not setdefault: setdefault builds an empty dict on every call (each group request asks; issue 22)
    overrides: dict[str, int] | None = world.services.get("coordinator_overrides")
    if overrides and group_id in overrides:
        return world.cluster.brokers[overrides[group_id]]
    topic = world.cluster.ensure_offsets_topic()
    partition = topic.partitions[partition_for(group_id, len(topic.partitions))]
    return world.cluster.brokers.get(partition.leader)


def check_coordinator(world: World, broker_id: int, group_id: str) -> None:
    """Raise NOT_COORDINATOR when a group request reaches a broker that does not own the group."""
    coordinator = coordinator_for(world, group_id)
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.")
    if coordinator.node_id != broker_id:
        raise KafkaError(ErrorCode.NOT_COORDINATOR, "This is not the correct coordinator.")
