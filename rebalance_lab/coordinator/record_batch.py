"""Magic v2 record batches, read the way the broker reads them: the header only.

The emulator stores each batch exactly as the producer sent it. Like Kafka's
``LogValidator`` for an in-place append, it rewrites only

* ``baseOffset`` (the log assigns offsets),
* ``partitionLeaderEpoch`` (stamped with the leader's epoch), and
* for a topic with ``message.timestamp.type=LogAppendTime``, the timestamp-type
  attribute bit and ``maxTimestamp`` - these are covered by the CRC, so the CRC is
  recomputed (``DefaultRecordBatch.setMaxTimestamp``).

``baseOffset``, ``length`` and ``partitionLeaderEpoch`` precede the CRC'd region
(the CRC covers ``attributes`` to the end), so the first two rewrites keep the
client's CRC valid. Compressed batches pass through untouched: the header and the
CRC are enough to store, index and serve them (a documented fidelity gap: Kafka
also decompresses to validate each record).
"""

from __future__ import annotations

import gzip
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def _UNLOADED(_data: bytes) -> int:  # a sentinel: the extension has not been looked for yet
    return 0


_fast_crc32c: Callable[[bytes], int] | None = _UNLOADED  # loaded on first use: the import costs start-up time


def _fast() -> Callable[[bytes], int] | None:
    """The C extension (~1000x faster), or None without the optional package (the table is exact)."""
    global _fast_crc32c
    if _fast_crc32c is _UNLOADED:
        try:
            _fast_crc32c = _crc32c_extension() or _crc32c_package()
        except ImportError:  # pragma: no cover - exercised only without the optional package
            _fast_crc32c = None
    return _fast_crc32c


def _crc32c_package() -> Callable[[bytes], int]:
    from crc32c import crc32c

    return crc32c


def _crc32c_extension() -> Callable[[bytes], int] | None:
    """crc32c's C function from its extension module, loaded without the package's ``__init__``, which reads
    its own version through importlib.metadata: ~100 million instructions on a process's first Produce, a
    quarter of what a whole serve start costs (issue 22). None when the extension is not where the pinned
    release keeps it (then the package is imported as usual)."""
    import importlib.machinery
    import importlib.util
    import os

    if "crc32c" in sys.modules:
        return None
    spec = importlib.util.find_spec("crc32c")  # finds the package without running it
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(loader.name, loader,
                                                                                        origin=path))
                loader.exec_module(module)
                found: Callable[[bytes], int] = module.crc32c
                return found
    return None

# Offsets of the v2 header fields (DefaultRecordBatch's *_OFFSET constants).
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + length: the bytes not counted in ``length``
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), the checksum of magic v2 batches (``Crc32C``)."""
    fast = _fast()
    if fast is not None:
        return int(fast(bytes(data)))
    crc = 0xFFFFFFFF
    for byte in bytes(data):
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@dataclass(frozen=True)
class BatchHeader:
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.length

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def last_sequence(self) -> int:
        # DefaultRecordBatch.lastSequence wraps at Integer.MAX_VALUE.
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


def parse_header(data: bytes | memoryview, at: int = 0) -> BatchHeader:
    if len(data) - at < HEADER_SIZE:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record batch is shorter than a v2 batch header")
    return BatchHeader(*_HEADER.unpack_from(data, at))


def split_batches(data: bytes) -> list[tuple[BatchHeader, bytes]]:
    """Cut a records blob into (header, exact batch bytes), validating framing and CRC.

    Mirrors ``ByteBufferLogInputStream`` plus ``UnifiedLog.analyzeAndValidateRecords``:
    a truncated or mis-sized batch, or one whose CRC does not match, is
    CORRUPT_MESSAGE; a batch with another magic is INVALID_RECORD (Produce v3+ only
    carries magic v2, ``ProduceRequest.validateRecords``).
    """
    batches: list[tuple[BatchHeader, bytes]] = []
    at = 0
    while at < len(data):
        header = parse_header(data, at)
        end = at + header.size
        if header.length < HEADER_SIZE - LOG_OVERHEAD or end > len(data):
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record batch size does not match the data")
        if header.magic != 2:
            raise KafkaError(ErrorCode.INVALID_RECORD, "Produce requests with version 3 or later are only "
                             "allowed to contain record batches with magic version 2")
        raw = data[at:end]
        if crc32c(memoryview(raw)[_ATTRIBUTES_AT:]) != header.crc:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                             "Record is corrupt (stored crc does not match computed crc)")
        batches.append((header, raw))
        at = end
    return batches


def rewrite(raw: bytes, base_offset: int, leader_epoch: int, log_append_time: int | None) -> bytes:
    """The batch as the log stores it: new base offset and epoch, optionally LogAppendTime."""
    out = bytearray(raw)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, _LEADER_EPOCH_AT, leader_epoch)
    if log_append_time is not None:
        (attributes,) = struct.unpack_from(">h", out, _ATTRIBUTES_AT)
        struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes | _TIMESTAMP_TYPE_BIT)
        struct.pack_into(">q", out, _MAX_TIMESTAMP_AT, log_append_time)
        struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)


# -- record-level reading (only what offset-by-timestamp lookups need) ---------------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at  # zig-zag, as ByteUtils.readVarint
        shift += 7


def record_timestamps(header: BatchHeader, raw: bytes) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of each record, or None when the batch's codec is not readable here.

    Uncompressed and gzip batches are readable with the standard library; snappy, lz4
    and zstd would need extra packages, so callers fall back to batch-level answers.
    """
    if header.attributes & _TIMESTAMP_TYPE_BIT:  # LogAppendTime: every record has maxTimestamp
        return [(header.base_offset + d, header.max_timestamp) for d in range(header.last_offset_delta + 1)]
    body = raw[HEADER_SIZE:]
    if header.compression == COMPRESSION_GZIP:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return None
    elif header.compression != COMPRESSION_NONE:
        return None
    try:
        return list(_iter_record_times(header, body))
    except IndexError:  # records that do not parse (Produce refuses them; a batch from elsewhere may have them)
        return None


def _iter_record_times(header: BatchHeader, body: bytes) -> Iterator[tuple[int, int]]:
    at = 0
    for _ in range(header.record_count):
        length, at = _varint(body, at)
        record_end = at + length
        at += 1  # attributes (int8, unused)
        ts_delta, at = _varint(body, at)
        offset_delta, _ = _varint(body, at)
        yield header.base_offset + offset_delta, header.base_timestamp + ts_delta
        at = record_end
