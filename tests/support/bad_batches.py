"""Hand-built Produce payloads that break one rule each, with what Kafka 4.4.0 answered for them.

Written from the v2 format's definition (``DefaultRecordBatch`` / ``DefaultRecord``); the expected
answers were read off a real 4.4.0 broker (Produce v11, one partition) and are re-checked by
``integration/test_kafka_limits.py``, which sends every payload to the broker and the emulator.
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass

from rebalance_lab.coordinator.record_batch import crc32c
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.dataplane.batches import _varint, make_batch

E = ErrorCode


@dataclass(frozen=True)
class Case:
    data: bytes
    code: ErrorCode
    message: str | None = None


def varint(value: int) -> bytes:
    return _varint(value)


def frame(after_crc: bytes, magic: int = 2) -> bytes:
    """A batch around everything that follows the CRC, with a correct length and CRC."""
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), -1, magic, crc32c(after_crc)) + after_crc


def fields(attributes: int = 0, last_delta: int = 0, count: int = 1, base_ts: int = 1000) -> bytes:
    """The header fields from attributes to the record count (no producer id)."""
    return struct.pack(">hiqqqhii", attributes, last_delta, base_ts, base_ts, -1, -1, -1, count)


def record(*, ts: bytes = b"\x00", offset_delta: bytes = b"\x00", key: bytes = b"\x02k", value: bytes = b"\x02v",
           headers: bytes = b"\x00") -> bytes:
    """One record from its raw parts (varints already encoded), with a correct size prefix."""
    body = b"\x00" + ts + offset_delta + key + value + headers
    return varint(len(body)) + body


def _bad_crc() -> bytes:
    data = bytearray(make_batch([b"a"]))
    data[-1] ^= 0xFF
    return bytes(data)


def cases() -> dict[str, Case]:
    ok = record()
    return {
        "a good batch": Case(make_batch([b"a"]), E.NONE),
        "2^31-1 records claimed, one sent": Case(frame(fields(last_delta=2**31 - 2, count=2**31 - 1) + ok),
                                                 E.INVALID_RECORD),
        "two records claimed, one sent": Case(frame(fields(last_delta=1, count=2) + ok), E.INVALID_RECORD),
        "bytes after the last record": Case(frame(fields() + ok + ok), E.INVALID_RECORD),
        "a truncated record": Case(frame(fields() + ok[:-3]), E.INVALID_RECORD),
        "a record size too big": Case(frame(fields() + varint(100) + ok[1:]), E.INVALID_RECORD),
        "a record size too small": Case(frame(fields() + varint(3) + ok[1:]), E.INVALID_RECORD),
        "a negative record size": Case(frame(fields() + varint(-3) + ok[1:]), E.INVALID_RECORD),
        "a record size varint over 5 bytes": Case(frame(fields() + b"\xff" * 12), E.UNKNOWN_SERVER_ERROR),
        "a record size varint cut short": Case(frame(fields() + b"\xff\xff"), E.INVALID_RECORD),
        "a timestamp varlong over 10 bytes": Case(frame(fields() + record(ts=b"\xff" * 10 + b"\x01")),
                                                  E.INVALID_RECORD),
        "an offset delta varint over 5 bytes": Case(frame(fields() + record(offset_delta=b"\xff" * 5 + b"\x01")),
                                                    E.INVALID_RECORD),
        "a key longer than the record": Case(frame(fields() + record(key=varint(1000) + b"k")), E.INVALID_RECORD),
        "a value longer than the record": Case(frame(fields() + record(value=varint(1000) + b"v")),
                                               E.INVALID_RECORD),
        "a negative key length (a null key)": Case(frame(fields() + record(key=varint(-5))), E.NONE),
        "2^31-1 headers claimed": Case(frame(fields() + record(headers=varint(2**31 - 1))), E.INVALID_RECORD),
        "a negative header count": Case(frame(fields() + record(headers=varint(-3))), E.INVALID_RECORD),
        "a negative header key length": Case(frame(fields() + record(headers=varint(1) + varint(-1) + b"\x02x")),
                                             E.INVALID_RECORD),
        "a null header value": Case(frame(fields() + record(headers=varint(1) + b"\x02h" + varint(-1))), E.NONE),
        "a header value longer than the record": Case(
            frame(fields() + record(headers=varint(1) + b"\x02h" + varint(500) + b"x")), E.INVALID_RECORD),
        "a record count of 0": Case(frame(fields(last_delta=-1, count=0)), E.INVALID_RECORD),
        "a negative record count": Case(frame(fields(last_delta=-1, count=-5) + ok), E.INVALID_RECORD),
        "a wrong CRC": Case(_bad_crc(), E.CORRUPT_MESSAGE),
        "magic 1": Case(frame(fields() + ok, magic=1), E.INVALID_RECORD),
        "magic 3": Case(frame(fields() + ok, magic=3), E.CORRUPT_MESSAGE, "Invalid magic found in record: 3"),
        "a batch cut one byte short": Case(make_batch([b"a"])[:-1], E.INVALID_RECORD),
        "ten bytes": Case(make_batch([b"a"])[:10], E.INVALID_RECORD),
        "a size field of 20": Case(struct.pack(">qiibI", 0, 20, -1, 2, 0) + bytes(60), E.CORRUPT_MESSAGE),
        "a size field of -1": Case(struct.pack(">qiibI", 0, -1, -1, 2, 0) + bytes(60), E.CORRUPT_MESSAGE,
                                   "Record size -1 is less than the minimum record overhead (14)"),
        "a batch then 20 zero bytes": Case(make_batch([b"a"]) + bytes(20), E.CORRUPT_MESSAGE),
        "a batch then the first 30 bytes of another": Case(make_batch([b"a"]) + make_batch([b"b"])[:30], E.NONE),
        "two batches": Case(make_batch([b"a"]) + make_batch([b"b"]), E.INVALID_RECORD),
        "a batch then 5 stray bytes": Case(make_batch([b"a"]) + bytes(5), E.NONE),
        "gzip garbage": Case(frame(fields(attributes=1) + b"garbage-not-gzip"), E.UNKNOWN_SERVER_ERROR),
        "gzip with fewer records than claimed": Case(frame(fields(attributes=1, last_delta=4, count=5)
                                                           + gzip.compress(ok)), E.INVALID_RECORD),
        "gzip with a truncated record": Case(frame(fields(attributes=1) + gzip.compress(ok[:-2])), E.INVALID_RECORD),
        "gzip with bytes after the last record": Case(frame(fields(attributes=1) + gzip.compress(ok + b"\x00\x00")),
                                                      E.INVALID_RECORD),
        "gzip with a size varint over 5 bytes": Case(frame(fields(attributes=1) + gzip.compress(b"\xff" * 12)),
                                                     E.INVALID_RECORD),
        "gzip, two good records": Case(frame(fields(attributes=1, last_delta=1, count=2)
                                             + gzip.compress(ok + record(offset_delta=b"\x02"))), E.NONE),
        "compression codec 7": Case(frame(fields(attributes=7) + ok), E.UNKNOWN_SERVER_ERROR),
        "a control batch from a client": Case(frame(fields(attributes=0x20) + ok), E.INVALID_RECORD),
    }


def future_batch(now_ms: int, ahead_ms: int) -> bytes:
    """One record stamped ``ahead_ms`` after ``now_ms`` (CreateTime)."""
    return frame(fields(base_ts=now_ms + ahead_ms) + record())


TIMESTAMP_REJECTED = "One or more records have been rejected due to invalid timestamp"
