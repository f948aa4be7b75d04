"""Partition logs on disk: ``<topic>-<partition>/`` with Kafka's segment format.

Each directory holds ``partition.metadata`` (the topic id, as Kafka's ``PartitionMetadataFile``
writes it: a re-created topic of the same name is another topic) and segment files of the batches
exactly as the in-memory log stores them: offsets assigned, leader epoch stamped, CRC valid. A
segment here is byte for byte what Kafka's ``.log`` file holds for the same batches.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.cluster import ClusterMetadata, TopicInfo
from rebalance_lab.coordinator.logs import LogKey, LogManager, PartitionLog, StoredBatch
from rebalance_lab.storage.segments import (
    DEFAULT_SEGMENT_BYTES,
    FlushPolicy,
    SegmentLog,
    StorageError,
    check_batch,
    open_log,
)

log = logging.getLogger("rebalance_lab.storage")
METADATA_FILE = "partition.metadata"
START_OFFSETS_FILE = "log-start-offset-checkpoint"  # Kafka's name and format (CheckpointFile, version 0)


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    return root / f"{topic}-{partition}"


def _write_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / METADATA_FILE).write_text(f"version: 0\ntopic_id: {topic_id}\n", encoding="ascii")


def _read_topic_id(directory: Path) -> uuid.UUID | None:
    path = directory / METADATA_FILE
    if not path.exists():
        return None
    for line in path.read_text(encoding="ascii", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            try:
                return uuid.UUID(value.strip())
            except ValueError as exc:
                raise StorageError(f"{path}: unreadable topic id {value.strip()!r}") from exc
    raise StorageError(f"{path}: no topic_id line")


class PartitionStore:
    """Writes every append of the data plane; loads the logs of known topics at start-up."""

    def __init__(self, root: Path, policy: FlushPolicy, logs: LogManager, cluster: ClusterMetadata,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.root = root
        self.policy = policy
        self.segment_bytes = segment_bytes
        self._logs = logs
        self._cluster = cluster
        self._open: dict[LogKey, tuple[str, SegmentLog]] = {}
        self._written: dict[LogKey, int] = {}  # the next offset not yet on disk
        self.max_producer_id = -1  # the largest producer id in the loaded batches
        self._start_offsets: dict[tuple[str, int], int] = {}  # as last written to the checkpoint

    # -- start-up ------------------------------------------------------------------------------------

    def load(self, reserved: set[str]) -> int:
        """Read every partition directory of a known topic into the logs; returns the batches loaded.

        A directory of a deleted (or re-created) topic is removed, as Kafka removes stray logs."""
        loaded = 0
        wanted = {partition_dir(self.root, t.name, p.partition): (t, p.partition)
                  for t in self._cluster.topics.values() if not t.internal for p in t.partitions}
        for directory in sorted(d for d in self.root.iterdir() if d.is_dir() and d.name not in reserved):
            target = wanted.get(directory)
            if target is None or _read_topic_id(directory) != target[0].topic_id:
                log.warning("%s: no such topic (or another topic of that name) in the metadata log: removed",
                            directory)
                shutil.rmtree(directory)
                continue
            loaded += self._load_partition(directory, *target)
        self._load_start_offsets()
        return loaded

    def _load_start_offsets(self) -> None:
        """``log-start-offset-checkpoint``: the start offsets DeleteRecords raised (Kafka reads it at start and
        takes the larger of it and the first segment's base offset)."""
        path = self.root / START_OFFSETS_FILE
        if not path.exists():
            return
        lines = path.read_text(encoding="utf-8").splitlines()
        try:
            entries = [(topic, int(p), int(offset)) for topic, p, offset in (line.split() for line in lines[2:])]
        except ValueError as exc:
            raise StorageError(f"{path}: unreadable ({exc})") from exc
        for topic, partition, offset in entries:
            info = self._cluster.topics.get(topic)
            plog = None if info is None else self._logs.existing(info.topic_id, partition)
            if plog is not None:
                plog.log_start_offset = max(plog.log_start_offset, min(offset, plog.log_end_offset))
        self._start_offsets = {(t, p): o for t, p, o in entries}

    def checkpoint_start_offsets(self) -> None:
        """Write the start offsets above 0 when they changed (atomically: a temporary file renamed)."""
        current = {}
        for key, (name, _segments) in self._open.items():
            plog = self._logs.existing(*key)
            if plog is not None and plog.log_start_offset > 0:
                current[(name, key[1])] = plog.log_start_offset
        if current == self._start_offsets:
            return
        lines = ["0", str(len(current)), *(f"{t} {p} {o}" for (t, p), o in sorted(current.items()))]
        temporary = self.root / f"{START_OFFSETS_FILE}.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.root / START_OFFSETS_FILE)
        self._start_offsets = current

    def _load_partition(self, directory: Path, topic: TopicInfo, partition: int) -> int:
        segments, frames = open_log(directory, check_batch, self.policy, self.segment_bytes)
        info = topic.partitions[partition]
        plog = self._logs.log(topic.topic_id, partition, info.leader_epoch)
        for frame in frames:
            plog.restore(frame)
            self.max_producer_id = max(self.max_producer_id, record_batch.parse_header(frame).producer_id)
        key = (topic.topic_id, partition)
        self._open[key] = (topic.name, segments)
        self._written[key] = plog.log_end_offset
        return len(frames)

    # -- while serving --------------------------------------------------------------------------------

    def appended(self, key: LogKey) -> None:
        """The log of ``key`` grew: write its new batches before the Produce is answered."""
        plog = self._logs.existing(*key)
        if plog is None:
            return
        start = self._written.get(key, plog.log_start_offset)
        if plog.log_end_offset <= start:
            return  # a retried batch answered from the producer state: nothing new
        segments = self._segments_of(key)
        if segments is None:
            return
        for batch in _batches_from(plog, start):
            segments.append(batch.data, batch.base_offset, batch.last_offset - batch.base_offset + 1)
        self._written[key] = plog.log_end_offset

    def _segments_of(self, key: LogKey) -> SegmentLog | None:
        entry = self._open.get(key)
        if entry is not None:
            return entry[1]
        topic = self._cluster.topic_by_id(key[0])
        if topic is None or topic.internal:
            return None
        directory = partition_dir(self.root, topic.name, key[1])
        _write_metadata(directory, topic.topic_id)
        segments = SegmentLog(directory, self.policy, self.segment_bytes)
        self._open[key] = (topic.name, segments)
        return segments

    def topic_deleted(self, name: str) -> None:
        """Close and remove the deleted topic's partition directories (``LogManager.asyncDelete``)."""
        for key, (topic, segments) in list(self._open.items()):
            if topic == name:
                segments.close()
                del self._open[key]
                self._written.pop(key, None)
        for directory in self.root.glob(f"{_glob_escape(name)}-*"):
            if directory.is_dir() and directory.name.rpartition("-")[0] == name:
                shutil.rmtree(directory)

    def logs(self) -> list[SegmentLog]:
        return [segments for _name, segments in self._open.values()]

    def close(self) -> None:
        for _name, segments in self._open.values():
            segments.close()


def _batches_from(plog: PartitionLog, start: int) -> list[StoredBatch]:
    """The stored batches at or after ``start`` (the new ones are at the end)."""
    found = []
    for batch in reversed(plog.batches):
        if batch.base_offset < start:
            break
        found.append(batch)
    return found[::-1]


def _glob_escape(name: str) -> str:
    return name.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")
