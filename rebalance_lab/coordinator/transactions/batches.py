"""Magic v2 record batches built from scratch: COMMIT/ABORT control batches (``EndTransactionMarker``)
and, for tests and tools, plain producer batches.

The layout is ``DefaultRecordBatch``'s: a 61-byte header (the CRC-32C covers attributes to the end)
followed by records whose lengths and deltas are zig-zag varints.
"""

from __future__ import annotations

import struct

from rebalance_lab.coordinator.record_batch import crc32c

_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count
_BEFORE_CRC = struct.Struct(">qiib")  # base offset, length, partition leader epoch, magic
_MARKER_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch
ABORT, COMMIT = 0, 1


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _bytes(value: bytes | None) -> bytes:
    return _varint(-1) if value is None else _varint(len(value)) + value


def _record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + _varint(0) + _varint(offset_delta) + _bytes(key) + _bytes(value) + _varint(0)
    return _varint(len(body)) + body


def encode_batch(records: list[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                 control: bool = False, timestamp: int = 0) -> bytes:
    """One uncompressed batch at base offset 0 (the log assigns offsets), all records at ``timestamp``."""
    attributes = (_TRANSACTIONAL if transactional else 0) | (_CONTROL if control else 0)
    body = b"".join(_record(i, key, value) for i, (key, value) in enumerate(records))
    after = _AFTER_CRC.pack(attributes, len(records) - 1, timestamp, timestamp, producer_id, producer_epoch,
                            base_sequence, len(records)) + body
    crc = struct.pack(">I", crc32c(after))
    length = 4 + 1 + 4 + len(after)  # partition leader epoch, magic, crc, then the rest
    return _BEFORE_CRC.pack(0, length, -1, 2) + crc + after


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp: int) -> bytes:
    """The marker the coordinator writes into each partition of a transaction (``MemoryRecords
    .withEndTransactionMarker``): key = (version 0, type), value = (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, COMMIT if commit else ABORT)
    return encode_batch([(key, _MARKER_VALUE.pack(0, coordinator_epoch))], producer_id=producer_id,
                        producer_epoch=producer_epoch, transactional=True, control=True, timestamp=timestamp)
