"""The data plane's shared state in ``world.services`` and the checks its handlers share.

``install(world)`` puts three sans-I/O components under ``world.services``:

* ``"logs"`` - :class:`~rebalance_lab.coordinator.logs.LogManager`, one log per partition;
* ``"fetch_sessions"`` - :class:`~rebalance_lab.coordinator.fetch_sessions.FetchSessionCache`,
  one per emulated broker (sessions are per broker in Kafka);
* ``"producer_ids"`` - :class:`ProducerIds`, InitProducerId's allocator.

Handlers call :func:`dataplane` which installs on first use, so a World built in a
test works without the server shell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rebalance_lab.coordinator.cluster import PartitionInfo, TopicInfo
from rebalance_lab.coordinator.fetch_sessions import FetchSessionCache
from rebalance_lab.coordinator.logs import LogManager, PartitionLog
from rebalance_lab.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from rebalance_lab.coordinator.world import World

_PRODUCER_ID_BLOCK = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


@dataclass
class ProducerIds:
    """Producer ids handed out in blocks of 1000 per broker, in order of first use,
    as KRaft's ``ProducerIdControlManager`` grants them (the first id is 0)."""

    next_block: int = 0
    blocks: dict[int, tuple[int, int]] = field(default_factory=dict)  # broker -> (next id, block end)

    def allocate(self, broker_id: int) -> int:
        next_id, end = self.blocks.get(broker_id, (0, 0))
        if next_id >= end:
            next_id, end = self.next_block, self.next_block + _PRODUCER_ID_BLOCK
            self.next_block = end
        self.blocks[broker_id] = (next_id + 1, end)
        return next_id


@dataclass
class DataPlane:
    logs: LogManager
    producer_ids: ProducerIds
    sessions: dict[int, FetchSessionCache]

    def sessions_of(self, broker_id: int, seed: int | None) -> FetchSessionCache:
        cache = self.sessions.get(broker_id)
        if cache is None:
            cache = self.sessions[broker_id] = FetchSessionCache(seed=None if seed is None else seed + broker_id)
        return cache


def install(world: World) -> DataPlane:
    """Create the data plane's services once; later calls return the same object."""
    existing = world.services.get("dataplane")
    if isinstance(existing, DataPlane):
        return existing
    plane = DataPlane(LogManager(), ProducerIds(), {})
    world.services["dataplane"] = plane
    world.services["logs"] = plane.logs
    world.services["fetch_sessions"] = plane.sessions
    world.services["producer_ids"] = plane.producer_ids

    def forget_deleted(_name: str, info: TopicInfo | None) -> None:
        if info is None:
            plane.logs.keep_only({t.topic_id for t in world.cluster.topics.values()})

    world.cluster.on_change(forget_deleted)
    return plane


def dataplane(world: World) -> DataPlane:
    return install(world)


def partition_log(world: World, topic: TopicInfo, partition: PartitionInfo) -> PartitionLog:
    return dataplane(world).logs.log(topic.topic_id, partition.partition, partition.leader_epoch)


def leadership_error(broker_id: int, partition: PartitionInfo, current_leader_epoch: int = -1) -> ErrorCode:
    """What ``ReplicaManager.getPartitionOrError`` + ``Partition.localLogWithEpochOrThrow`` answer.

    A broker that is not a replica: NOT_LEADER_OR_FOLLOWER. A replica first checks
    the client's leader epoch (``checkCurrentLeaderEpoch``: older -> FENCED_LEADER_EPOCH,
    newer -> UNKNOWN_LEADER_EPOCH, -1 skips the check), then that it leads.
    """
    if broker_id not in partition.replicas:
        return ErrorCode.NOT_LEADER_FOR_PARTITION
    if current_leader_epoch != -1 and current_leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > partition.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if partition.leader_id != broker_id:
        return ErrorCode.NOT_LEADER_FOR_PARTITION
    return ErrorCode.NONE
