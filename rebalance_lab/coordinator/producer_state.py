"""Per-partition producer state: sequences, epochs, open transactions and the aborted-transaction index.

Sans-I/O, one instance per partition log, as Kafka's ``ProducerStateManager`` + ``ProducerAppendInfo``
(checks before an append) and the ``TransactionIndex`` (aborted transactions):

* a batch with a producer id first looks for a duplicate among the producer's last five batches
  (``ProducerStateEntry.findDuplicateBatch``): a retry is answered with the first append's offset;
* an epoch older than the producer's is INVALID_PRODUCER_EPOCH (``checkProducerEpoch``);
* a new epoch must start at sequence 0, and the same epoch must continue at last sequence + 1
  (wrapping at 2^31-1), else OUT_OF_ORDER_SEQUENCE_NUMBER (``checkSequence``); a producer the
  partition does not know yet may start at any sequence (KIP-360: its state may have been
  removed by retention);
* a transactional batch opens the producer's transaction at its first offset; a control batch
  (COMMIT/ABORT marker) closes it, and an abort is remembered with the marker's offset;
* the last stable offset is the first offset of the earliest open transaction (else the high
  watermark).

Every piece of state is rebuilt from the stored batches (``observe``), so a log restored from a
data directory has the same producers, open transactions and aborted index.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from rebalance_lab.coordinator.record_batch import HEADER_SIZE, BatchHeader
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_BATCHES_KEPT = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_MAX_SEQUENCE = (1 << 31) - 1
_CONTROL_KEY = struct.Struct(">hh")  # ControlRecordType: version, type (0 abort, 1 commit)
ABORT, COMMIT = 0, 1


@dataclass
class ProducerEntry:
    epoch: int
    last_sequence: int = -1
    batches: list[tuple[int, int, int]] = field(default_factory=list)  # first seq, last seq, first offset
    open_txn_first_offset: int | None = None
    last_timestamp: int = -1
    coordinator_epoch: int = -1


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def _in_sequence(last: int, first: int) -> bool:
    return first == last + 1 or (first == 0 and last == _MAX_SEQUENCE)


class ProducerState:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.aborted: list[AbortedTxn] = []

    # -- before an append -----------------------------------------------------------

    def duplicate_of(self, header: BatchHeader) -> int | None:
        entry = self.producers.get(header.producer_id)
        if header.producer_id < 0 or entry is None or entry.epoch != header.producer_epoch:
            return None
        for first_seq, last_seq, first_offset in entry.batches:
            if (first_seq, last_seq) == (header.base_sequence, header.last_sequence):
                return first_offset
        return None

    def check(self, header: BatchHeader, offset: int) -> None:
        """Kafka's checks of a client batch's epoch and sequence; raises KafkaError."""
        entry = self.producers.get(header.producer_id)
        if header.producer_id < 0 or entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"Epoch of producer {header.producer_id} at offset {offset} is {header.producer_epoch}, "
                             f"which is smaller than the last seen epoch {entry.epoch}")
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Invalid sequence number for new epoch of producer {header.producer_id}")
            return
        if entry.last_sequence >= 0 and not _in_sequence(entry.last_sequence, header.base_sequence):
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Out of order sequence number for producer {header.producer_id} at offset {offset}: "
                             f"{header.base_sequence} (incoming seq. number), {entry.last_sequence} "
                             "(current end sequence number)")

    # -- after an append (also used to rebuild from a restored log) ---------------------

    def observe(self, header: BatchHeader, data: bytes, base: int) -> None:
        if header.producer_id < 0:
            return
        if header.is_control:
            self._end_txn(header, data, base)
            return
        entry = self.producers.get(header.producer_id)
        if entry is None or entry.epoch != header.producer_epoch:
            open_at = None if entry is None else entry.open_txn_first_offset
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch)
            entry.open_txn_first_offset = open_at
        entry.last_sequence = header.last_sequence
        entry.last_timestamp = header.max_timestamp
        entry.batches.append((header.base_sequence, header.last_sequence, base))
        del entry.batches[:-_BATCHES_KEPT]
        if header.is_transactional and entry.open_txn_first_offset is None:
            entry.open_txn_first_offset = base

    def _end_txn(self, header: BatchHeader, data: bytes, offset: int) -> None:
        entry = self.producers.setdefault(header.producer_id, ProducerEntry(header.producer_epoch))
        if header.producer_epoch > entry.epoch:
            # A marker with a bumped epoch (an epoch fence) resets the sequences, as appendEndTxnMarker does
            entry.epoch, entry.last_sequence, entry.batches = header.producer_epoch, -1, []
        first = entry.open_txn_first_offset
        entry.open_txn_first_offset = None
        if first is not None and control_type(data) == ABORT:
            self.aborted.append(AbortedTxn(header.producer_id, first, offset))

    # -- reads ------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        opened = [e.open_txn_first_offset for e in self.producers.values() if e.open_txn_first_offset is not None]
        return min(opened) if opened else None

    def open_transaction(self, producer_id: int) -> int | None:
        entry = self.producers.get(producer_id)
        return None if entry is None else entry.open_txn_first_offset

    def aborted_between(self, fetch_offset: int, upper: int) -> list[AbortedTxn]:
        """``TransactionIndex.collectAbortedTxns``: aborts ending at or after the fetch offset and starting
        before the end of the data read."""
        return [a for a in self.aborted if a.last_offset >= fetch_offset and a.first_offset < upper]


def control_type(data: bytes) -> int:
    """The type of a control batch's (single) record, read from its key."""
    at = HEADER_SIZE
    at = _skip_varint(data, at)  # record length
    at += 1  # attributes
    at = _skip_varint(data, at)  # timestamp delta
    at = _skip_varint(data, at)  # offset delta
    at = _skip_varint(data, at)  # key length (4)
    _version, kind = _CONTROL_KEY.unpack_from(data, at)
    return int(kind)


def _skip_varint(data: bytes, at: int) -> int:
    while data[at] & 0x80:
        at += 1
    return at + 1
