"""``serve --data-dir``: load a data directory into a fresh world, then write every change as it happens.

Installed as a world hook before any client connects. Loading order is Kafka's: the metadata log
first (topics), then the partition logs of those topics, then the coordinator's log (committed
offsets, classic and consumer groups, with their members' timers armed as ``onLoaded`` arms them).
Every write happens inside the request that caused it, so it is in the file (the OS page cache)
before the answer leaves: a ``kill -9`` loses no acknowledged record, commit or group change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from rebalance_lab.coordinator import dataplane
from rebalance_lab.coordinator.cluster import TopicInfo
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.coordinator.transactions.service import abort_orphaned_transactions
from rebalance_lab.coordinator.world import World
from rebalance_lab.storage import groups, partitions, topics
from rebalance_lab.storage.segments import DEFAULT_SEGMENT_BYTES, DirectoryLock, FlushPolicy, SegmentLog

log = logging.getLogger("rebalance_lab.storage")
SERVICE_KEY = "storage"  # world.services["storage"]: the Storage of a world started with a data directory
# log.flush.start.offset.checkpoint.interval.ms: how often DeleteRecords' start offsets are checkpointed
START_OFFSET_CHECKPOINT_MS = 60_000
PRODUCER_ID_BLOCK = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE, the size dataplane.ProducerIds grants


@dataclass(frozen=True)
class Loaded:
    topics: int
    batches: int
    offsets: int
    classic_groups: int
    consumer_groups: int


class Storage:
    """The data directory of one emulator; a world ``Timed`` component for ``flush.ms``."""

    def __init__(self, world: World, root: Path, policy: FlushPolicy,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.root = root
        self.policy = policy
        self._world = world
        self._lock = DirectoryLock(root)
        self.topics = topics.TopicStore(root)
        self.partitions = partitions.PartitionStore(root, policy, dataplane.install(world).logs, world.cluster,
                                                    segment_bytes)
        self.groups = groups.GroupStore(root, policy)
        self._next_flush: int | None = None
        self._next_checkpoint = 0
        self._writing = False

    def load(self) -> Loaded:
        world = self._world
        try:
            count = self.topics.load(world.cluster)
            batches = self.partitions.load({topics.DIRECTORY, groups.DIRECTORY})
            _skip_used_producer_ids(dataplane.install(world).producer_ids, self.partitions.max_producer_id)
            state = self.groups.load(world.now_ms(), service_of(world), offsets_of(world).store)
        except BaseException:
            self.close()
            raise
        loaded = Loaded(count, batches, len(state.offsets), len(state.classic), len(state.consumer))
        log.info("data directory %s loaded: %s", self.root, loaded)
        return loaded

    def start_writing(self) -> None:
        world = self._world
        self._writing = True
        group_service = service_of(world)
        world.cluster.on_change(self._topic_changed)
        dataplane.install(world).logs.on_append(self.partitions.appended)
        offsets_of(world).store.listener = self.groups.offset_changed
        group_service.subscribe(self._group_record)
        if self.policy.interval_ms is not None:
            self._next_flush = world.now_ms() + self.policy.interval_ms
        self._next_checkpoint = world.now_ms() + START_OFFSET_CHECKPOINT_MS
        world.register_timed(self)

    def _topic_changed(self, name: str, info: TopicInfo | None) -> None:
        self.topics.changed(name, info)
        if info is None:
            self.partitions.topic_deleted(name)

    def _group_record(self, record: GroupRecord) -> None:
        self.groups.group_record(service_of(self._world).coordinator.group, record)

    def segment_logs(self) -> list[SegmentLog]:
        logs = self.partitions.logs()
        group_log = self.groups.log.segment_log
        return [*logs, group_log] if group_log is not None else logs

    # -- flush.ms and the start-offset checkpoint (Timed) ------------------------------------------------

    def next_deadline(self) -> int | None:
        return min(d for d in (self._next_flush, self._next_checkpoint) if d is not None)

    def fire_timers(self, now_ms: int) -> None:
        if self._next_flush is not None and now_ms >= self._next_flush and self.policy.interval_ms is not None:
            for segment_log in self.segment_logs():
                segment_log.flush()
            self._next_flush = now_ms + self.policy.interval_ms
        if now_ms >= self._next_checkpoint:
            self.partitions.checkpoint_start_offsets()
            self._next_checkpoint = now_ms + START_OFFSET_CHECKPOINT_MS

    def close(self) -> None:
        if self._writing:
            self.partitions.checkpoint_start_offsets()
        self.partitions.close()
        self.groups.close()
        self.topics.close()
        self._lock.release()


def _skip_used_producer_ids(producer_ids: dataplane.ProducerIds, max_used: int) -> None:
    """New producer ids start after every id found in the logs: a reused id would make a new producer's first
    batches look like retries of an old producer's and be dropped as duplicates. (KRaft keeps the next block
    in its metadata log; the logs are where the ids that matter here are.)"""
    if max_used >= 0:
        block = PRODUCER_ID_BLOCK
        producer_ids.next_block = max(producer_ids.next_block, (max_used // block + 1) * block)


def install(world: World, data_dir: str, policy: FlushPolicy, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> Storage:
    """Load ``data_dir`` into ``world`` and keep writing to it; the caller closes the storage at shutdown."""
    storage = Storage(world, Path(data_dir), policy, segment_bytes)
    storage.load()
    storage.start_writing()
    # The transaction coordinator's state is not stored: transactions left open are aborted (markers stored too)
    aborted = abort_orphaned_transactions(world)
    if aborted:
        log.info("aborted %d transactions left open in the logs", aborted)
    world.services[SERVICE_KEY] = storage
    return storage
