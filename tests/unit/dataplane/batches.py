"""A tiny magic v2 record-batch builder for tests, written from the format's definition
(``DefaultRecordBatch`` / ``DefaultRecord``), independent of the code under test except
for the shared CRC-32C function, which has its own known-answer test."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence

from rebalance_lab.coordinator.record_batch import crc32c


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + _varint(ts_delta) + _varint(offset_delta)
    body += _varint(-1) if key is None else _varint(len(key)) + key
    body += _varint(-1) if value is None else _varint(len(value)) + value
    body += _varint(0)  # no headers
    return _varint(len(body)) + body


def make_batch(
    values: Sequence[bytes],
    timestamps: Sequence[int] | None = None,
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    gzipped: bool = False,
) -> bytes:
    stamps = list(timestamps) if timestamps is not None else [1_000 + i for i in range(len(values))]
    base_ts = stamps[0]
    pairs = enumerate(zip(values, stamps, strict=True))
    records = b"".join(_record(i, ts - base_ts, b"k%d" % i, v) for i, (v, ts) in pairs)
    if gzipped:
        records = gzip.compress(records)
    attributes = 1 if gzipped else 0
    after_crc = struct.pack(">hiqqqhii", attributes, len(values) - 1, base_ts, max(stamps), producer_id,
                            producer_epoch, base_sequence, len(values)) + records
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch + magic + crc + the rest
    return struct.pack(">qiibI", base_offset, length, -1, 2, crc) + after_crc
