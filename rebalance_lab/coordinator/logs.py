"""In-memory partition logs: the data plane behind Produce, Fetch and ListOffsets.

Sans-I/O (STYLE.md principle 1): appends take ``now`` from the caller; nothing here
awaits or reads a clock. Each partition has one log, shared by all emulated
brokers: replication is instant, so the high watermark is the log end offset as
soon as an append returns (``Partition.maybeIncrementLeaderHW`` with every ISR
member caught up). The last stable offset stops at the first open transaction
(``producer_state.py``), and the transaction coordinator writes COMMIT/ABORT control
batches with :meth:`PartitionLog.append_marker`.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.producer_state import AbortedTxn, ProducerState
from rebalance_lab.coordinator.record_batch import BatchHeader
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

EARLIEST_TIMESTAMP = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3  # KIP-734
EARLIEST_LOCAL_TIMESTAMP = -4  # KIP-405: no tiered storage here, so the same as earliest
DEFAULT_MAX_MESSAGE_BYTES = 1_048_588  # max.message.bytes


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    leader_epoch: int
    header: BatchHeader
    data: bytes


@dataclass(frozen=True)
class AppendResult:
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


@dataclass(frozen=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int


class PartitionLog:
    def __init__(self, leader_epoch: int = 0) -> None:
        self.batches: list[StoredBatch] = []
        self._last_offsets: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.leader_epoch = leader_epoch
        self.producer_state = ProducerState()

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producer_state.first_unstable_offset()
        return self.high_watermark if first_unstable is None else min(first_unstable, self.high_watermark)

    # -- append ------------------------------------------------------------------------

    def append(self, records: bytes, now_ms: int, log_append_time: bool = False,
               max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> AppendResult:
        """Validate and append one Produce partition's records; raises KafkaError."""
        batches = record_batch.split_batches(records)
        if len(batches) != 1:
            # ProduceRequest.validateRecords: v3+ carries exactly one batch per partition.
            raise KafkaError(ErrorCode.INVALID_RECORD, "Produce requests with version 3 or later are only "
                             "allowed to contain exactly one record batch per partition")
        header, raw = batches[0]
        _validate_client_batch(header)
        if header.size > max_message_bytes:
            raise KafkaError(ErrorCode.MESSAGE_SIZE_TOO_LARGE,
                             f"The record batch size {header.size} exceeds max.message.bytes")
        duplicate = self.producer_state.duplicate_of(header)
        if duplicate is not None:
            return AppendResult(duplicate, -1, self.log_start_offset)
        self.producer_state.check(header, self.log_end_offset)
        append_time = now_ms if log_append_time else None
        base = self.log_end_offset
        stored = record_batch.rewrite(raw, base, self.leader_epoch, append_time)
        self._store(stored, now_ms if log_append_time else header.max_timestamp)
        self.producer_state.observe(header, stored, base)
        return AppendResult(base, -1 if append_time is None else append_time, self.log_start_offset)

    def restore(self, data: bytes) -> None:
        """Put back a batch read from a data directory, as stored; the producer state is rebuilt from the
        batches as ``ProducerStateManager`` rebuilds it from the log on recovery."""
        header = record_batch.parse_header(data)
        self._store(data, header.max_timestamp)
        self.producer_state.observe(header, data, header.base_offset)

    def append_marker(self, marker: bytes) -> int:
        """Append a control batch built by the transaction coordinator (``WriteTxnMarkers``); its offset."""
        base = self.log_end_offset
        stored = record_batch.rewrite(marker, base, self.leader_epoch, None)
        header = record_batch.parse_header(stored)
        self._store(stored, header.max_timestamp)
        self.producer_state.observe(header, stored, base)
        return base

    def aborted_transactions(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        return self.producer_state.aborted_between(fetch_offset, upper)

    def _store(self, data: bytes, max_timestamp: int) -> None:
        header = record_batch.parse_header(data)
        last = header.base_offset + header.last_offset_delta
        self.batches.append(StoredBatch(header.base_offset, last, max_timestamp, header.partition_leader_epoch,
                                        header, data))
        self._last_offsets.append(last)
        self.log_end_offset = last + 1

    # -- read --------------------------------------------------------------------------

    def check_offset(self, offset: int) -> None:
        """OFFSET_OUT_OF_RANGE outside [log start, log end] (``LocalLog.read``)."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Received request for offset {offset}, but we only have log segments "
                f"in the range {self.log_start_offset} to {self.log_end_offset}.",
            )

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1: the high watermark) and return it.

        As ``Partition.deleteRecordsOnLeader`` and ``UnifiedLog.maybeIncrementLogStartOffset``: below 0 or
        above the high watermark is OFFSET_OUT_OF_RANGE; the start never moves back. Batches stay stored
        (Kafka deletes only whole segments); reads below the start are refused by :meth:`check_offset`.
        """
        wanted = self.high_watermark if offset == -1 else offset
        if wanted < 0 or wanted > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"Cannot increment the log start offset to {wanted}")
        self.log_start_offset = max(self.log_start_offset, wanted)
        return self.log_start_offset

    def read(self, offset: int, max_bytes: int, min_one_batch: bool, upper: int | None = None) -> bytes:
        """Whole batches from the one containing ``offset``, up to ``max_bytes``.

        As ``LogSegment.read``: the first batch is returned even if it is larger than
        ``max_bytes`` when ``min_one_batch`` (KIP-74), and only batches below ``upper``
        (the high watermark for consumers) are visible.
        """
        self.check_offset(offset)
        limit = self.high_watermark if upper is None else upper
        index = bisect.bisect_left(self._last_offsets, offset)
        chunks: list[bytes] = []
        size = 0
        for batch in self.batches[index:]:
            if batch.base_offset >= limit:
                break
            if size + len(batch.data) > max_bytes and not (min_one_batch and not chunks):
                break
            chunks.append(batch.data)
            size += len(batch.data)
        return b"".join(chunks)

    def bytes_available(self, offset: int, upper: int | None = None) -> int:
        limit = self.high_watermark if upper is None else upper
        index = bisect.bisect_left(self._last_offsets, offset)
        return sum(len(b.data) for b in self.batches[index:] if b.base_offset < limit)

    # -- offsets for timestamps (ListOffsets) ---------------------------------------------

    def offset_for_timestamp(self, timestamp: int, upper: int | None = None) -> TimestampAndOffset | None:
        """ListOffsets' answer for a special (-1, -2, -3, -4) or real timestamp, None if none."""
        limit = self.high_watermark if upper is None else upper
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, limit, self.leader_epoch)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return TimestampAndOffset(-1, self.log_start_offset, self._epoch_at(self.log_start_offset))
        visible = [b for b in self.batches if b.last_offset < limit and b.last_offset >= self.log_start_offset]
        if timestamp == MAX_TIMESTAMP:
            return _max_timestamp(visible)
        return _first_at_or_after(visible, timestamp, self.log_start_offset)

    def _epoch_at(self, offset: int) -> int:
        index = bisect.bisect_left(self._last_offsets, offset)
        return self.batches[index].leader_epoch if index < len(self.batches) else self.leader_epoch


def _validate_client_batch(header: BatchHeader) -> None:
    """The checks ``LogValidator.validateBatch`` makes for a batch from a client."""
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Batch has an invalid offset range")
    if header.record_count <= 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Invalid reported count for record batch: {header.record_count}")
    if header.record_count != count_from_offsets:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Inconsistent batch offset range and count of records")
    if header.is_control:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Invalid sequence number {header.base_sequence} in record "
                         f"batch with producerId {header.producer_id}")


def _max_timestamp(batches: list[StoredBatch]) -> TimestampAndOffset | None:
    # KIP-734: the record with the largest timestamp; on ties the earliest such record.
    best: StoredBatch | None = None
    for batch in batches:
        if best is None or batch.max_timestamp > best.max_timestamp:
            best = batch
    if best is None:
        return None
    times = record_batch.record_timestamps(best.header, best.data)
    if times is None:  # unreadable codec: the batch's last offset, as Kafka before 3.8 did
        return TimestampAndOffset(best.max_timestamp, best.last_offset, best.leader_epoch)
    offset = next((o for o, t in times if t == best.max_timestamp), best.last_offset)
    return TimestampAndOffset(best.max_timestamp, offset, best.leader_epoch)


def _first_at_or_after(batches: list[StoredBatch], timestamp: int, start: int = 0) -> TimestampAndOffset | None:
    # LogSegment.findOffsetByTimestamp: the first batch whose max >= target, then its first record >= target
    # at or after the log start offset (the startingOffset UnifiedLog passes).
    for batch in batches:
        if batch.max_timestamp < timestamp:
            continue
        times = record_batch.record_timestamps(batch.header, batch.data)
        if times is None:
            return TimestampAndOffset(batch.max_timestamp, max(batch.base_offset, start), batch.leader_epoch)
        for offset, ts in times:
            if ts >= timestamp and offset >= start:
                return TimestampAndOffset(ts, offset, batch.leader_epoch)
    return None


# The key of a partition log: the topic id survives renames of nothing but a delete and
# re-create gets a new id, so a re-created topic starts with empty logs as in Kafka.
LogKey = tuple[uuid.UUID, int]


class LogManager:
    """All partition logs, created on first use; listeners hear of every append."""

    def __init__(self) -> None:
        self._logs: dict[LogKey, PartitionLog] = {}
        self._listeners: list[Callable[[LogKey], None]] = []

    def on_append(self, listener: Callable[[LogKey], None]) -> None:
        self._listeners.append(listener)

    def log(self, topic_id: uuid.UUID, partition: int, leader_epoch: int = 0) -> PartitionLog:
        """The partition's log, stamped with the partition's current leader epoch."""
        key = (topic_id, partition)
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = PartitionLog(leader_epoch)
        log.leader_epoch = leader_epoch
        return log

    def existing(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        return self._logs.get((topic_id, partition))

    def appended(self, key: LogKey) -> None:
        for listener in self._listeners:
            listener(key)

    def keep_only(self, topic_ids: set[uuid.UUID]) -> None:
        """Forget the logs of deleted topics (a re-created topic has a new id and empty logs)."""
        for key in [k for k in self._logs if k[0] not in topic_ids]:
            del self._logs[key]
