"""The record-by-record check Kafka makes of a client's batch before it enters the log (issue 17, defect 3).

Kafka's ``LogValidator`` iterates every record of a batch from a client (``DefaultRecordBatch``'s
record iterator, ``DefaultRecord.readFrom``), so a batch whose records do not parse never reaches
the log. What Kafka 4.4.0 answers, established on the broker (``integration/test_kafka_limits.py``):

* a record that runs past the batch, fewer records than the header's count, bytes left over after
  the last record, a record whose size varint disagrees with what it holds, a negative header
  count or header key length -> INVALID_RECORD (``InvalidRecordException``), no message;
* a varint longer than 5 bytes (a varlong longer than 10) -> UNKNOWN_SERVER_ERROR: ``ByteUtils``
  throws ``IllegalArgumentException``, which nothing maps to a Kafka error;
* an unknown compression codec id, or a compressed body that does not decompress ->
  UNKNOWN_SERVER_ERROR as well.

Before the records, :func:`produce_batch` frames the partition's bytes as ``ByteBufferLogInputStream``
and ``ProduceRequest.validateRecords`` do: a size field under 14 or a magic above 2 -> CORRUPT_MESSAGE
with Kafka's message; no complete batch, or more than one, or magic 0/1 -> INVALID_RECORD; a batch
shorter than its 61-byte header or with a wrong CRC -> CORRUPT_MESSAGE without a message; bytes after
the batch too few to hold another are ignored, as Kafka's iterator ignores them.

Only uncompressed and gzip bodies are read here (the standard library's codecs); snappy, lz4 and
zstd bodies would need extra packages and are stored unread (FIDELITY.md).
"""

from __future__ import annotations

import gzip
import zlib

from rebalance_lab.coordinator.record_batch import (
    COMPRESSION_GZIP,
    COMPRESSION_NONE,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    crc32c,
    parse_header,
)
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_INT_MASK, _LONG_MASK = (1 << 32) - 1, (1 << 64) - 1
_KNOWN_CODECS = range(5)  # none, gzip, snappy, lz4, zstd (CompressionType.forId)


_MAGIC_AT = 16
_HEADER_UP_TO_MAGIC = 17  # Records.HEADER_SIZE_UP_TO_MAGIC
_MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0
_ATTRIBUTES_AT = 21


class AnsweredError(KafkaError):
    """A KafkaError whose message Kafka 4.4.0 puts in the Produce partition response (most have none)."""


class RecordErrors(AnsweredError):
    """Errors of single records (``RecordValidationException``): Produce lists them as record_errors."""

    def __init__(self, code: ErrorCode, message: str, errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.errors = errors


class _TooLong(Exception):
    """A varint over 5 bytes or a varlong over 10 (``ByteUtils.illegalVarintException``)."""


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_RECORD, message)


def _varint(data: bytes, at: int, max_bytes: int = 5) -> tuple[int, int]:
    """A zig-zag varint of at most ``max_bytes`` (5, or 10 for a varlong) at ``at``, as Java's int or long
    (``ByteUtils.readVarint``), and the position after it. Reading past the end raises IndexError."""
    byte = data[at]
    if byte < 0x80:  # the common one-byte case
        return (byte >> 1) ^ -(byte & 1), at + 1
    value, shift = byte & 0x7F, 7
    for _ in range(max_bytes - 1):
        at += 1
        byte = data[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            value &= _INT_MASK if max_bytes == 5 else _LONG_MASK  # the bits Java's int or long keeps
            return (value >> 1) ^ -(value & 1), at + 1
        shift += 7
    raise _TooLong


def _read_size(data: bytes, at: int, compressed: bool) -> tuple[int, int]:
    try:
        return _varint(data, at)
    except _TooLong:
        if compressed:  # the stream reader wraps it: InvalidRecordException
            raise _invalid("Found invalid record structure") from None
        # DefaultRecord.readFrom reads the size outside its try: the IllegalArgumentException reaches
        # the request handler, which answers UNKNOWN_SERVER_ERROR.
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "Varint is too long") from None


def _read_record(data: bytes, at: int, compressed: bool) -> tuple[int, int, int]:
    """``DefaultRecord.readFrom``: one record at ``at``, checked against its own size prefix.

    Returns the position after it, its offset delta and its timestamp delta. A read past the end of
    the records raises IndexError (a skipped key or value may point past it; the next read finds out).
    """
    size, at = _read_size(data, at, compressed)
    start = at
    if len(data) - start < size:
        raise _invalid(f"Invalid record size: expected {size} bytes in record payload, "
                       f"but the batch has only {len(data) - start}")
    try:
        timestamp_delta, at = _varint(data, at + 1, 10)  # after the attributes byte; a varlong
        offset_delta, at = _varint(data, at)
        key_length, at = _varint(data, at)  # key, value: a negative length is null
        at += max(key_length, 0)
        value_length, at = _varint(data, at)
        at = _read_headers(data, at + max(value_length, 0))
    except _TooLong:
        raise _invalid("Found invalid record structure") from None
    if at - start != size:
        raise _invalid(f"Invalid record size: expected to read {size} bytes in record payload, "
                       f"but instead read {at - start}")
    return at, offset_delta, timestamp_delta


def _read_headers(data: bytes, at: int) -> int:
    count, at = _varint(data, at)
    if count < 0:
        raise _invalid(f"Found invalid number of record headers {count}")
    for _ in range(count):  # each header takes at least two bytes, so a huge count runs out of data
        key_length, at = _varint(data, at)
        if key_length < 0:
            raise _invalid(f"Invalid negative header key size {key_length}")
        value_length, at = _varint(data, at + key_length)
        at += max(value_length, 0)
    return at


def _records_region(header: BatchHeader, raw: bytes) -> bytes | None:
    """The bytes holding the records, decompressed; None for a codec not readable here."""
    codec = header.compression
    if codec not in _KNOWN_CODECS:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")
    body = raw[HEADER_SIZE:]
    if codec == COMPRESSION_NONE:
        return body
    if codec != COMPRESSION_GZIP:
        return None
    try:
        return gzip.decompress(body)
    except (OSError, EOFError, zlib.error) as exc:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "Failed to decompress record stream") from exc


def validate_records(header: BatchHeader, raw: bytes) -> list[tuple[int, int]] | None:
    """Read every record of a client's batch as ``LogValidator`` does; raises KafkaError.

    Returns each record's (offset delta, timestamp delta), or None for a codec not readable here.
    """
    region = _records_region(header, raw)
    if region is None:
        return None
    compressed = header.compression != COMPRESSION_NONE
    records: list[tuple[int, int]] = []
    at = 0
    try:
        for _ in range(max(header.record_count, 0)):
            # fewer records than the count claims runs out of data: bounded by the data, not the count
            at, offset_delta, timestamp_delta = _read_record(region, at, compressed)
            records.append((offset_delta, timestamp_delta))
    except IndexError:  # Java's BufferUnderflowException
        raise _invalid("Found invalid record structure") from None
    if at != len(region):
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return records


def _signed_byte(value: int) -> int:
    return value - 256 if value > 127 else value


def _first_frame(records: bytes) -> bytes:
    """The first batch, as ``ProduceRequest.validateRecords`` gets it from ``ByteBufferLogInputStream``.

    Its two framing errors carry Kafka's message to the client; the others do not (as the 4.4.0 broker
    answers them).
    """
    if len(records) < LOG_OVERHEAD:
        raise _invalid("Produce requests with version 3 or later must contain exactly one record batch")
    size = int.from_bytes(records[8:12], "big", signed=True)
    if size < _MIN_RECORD_OVERHEAD:
        raise AnsweredError(ErrorCode.CORRUPT_MESSAGE,
                            f"Record size {size} is less than the minimum record overhead ({_MIN_RECORD_OVERHEAD})")
    if LOG_OVERHEAD + size > len(records) or len(records) < _HEADER_UP_TO_MAGIC:
        raise _invalid("Produce requests with version 3 or later must contain exactly one record batch")
    magic = _signed_byte(records[_MAGIC_AT])
    if not 0 <= magic <= 2:
        raise AnsweredError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
    if magic != 2:
        raise _invalid("Produce requests with version 3 or later are only allowed to contain record batches "
                       "with magic version 2")
    return records[:LOG_OVERHEAD + size]


def produce_batch(records: bytes, max_message_bytes: int) -> tuple[BatchHeader, bytes]:
    """The one v2 batch of a Produce partition, framed, size- and CRC-checked; raises KafkaError.

    Bytes after the batch too few to frame another (under 12, or under the size they announce) are
    ignored as Kafka's iterator ignores them.
    """
    raw = _first_frame(records)
    if len(raw) < HEADER_SIZE:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record batch is smaller than the minimum allowed overhead")
    header = parse_header(raw)
    if len(raw) > max_message_bytes:  # UnifiedLog.analyzeAndValidateRecords: the size before the CRC
        raise KafkaError(ErrorCode.MESSAGE_SIZE_TOO_LARGE,
                         f"The record batch size {len(raw)} exceeds max.message.bytes")
    if crc32c(memoryview(raw)[_ATTRIBUTES_AT:]) != header.crc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "Record is corrupt (stored crc does not match computed crc)")
    _check_rest(records, len(raw))
    return header, raw


def _check_rest(records: bytes, at: int) -> None:
    """What follows the batch: a second batch -> INVALID_RECORD; a size under 14 -> CORRUPT_MESSAGE
    (found later than the first batch's, so without a message, as the 4.4.0 broker answers)."""
    rest = len(records) - at
    if rest < LOG_OVERHEAD:
        return
    size = int.from_bytes(records[at + 8:at + 12], "big", signed=True)
    if size < _MIN_RECORD_OVERHEAD:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Record size {size} is less than the minimum record overhead "
                         f"({_MIN_RECORD_OVERHEAD})")
    if LOG_OVERHEAD + size <= rest:
        raise _invalid("One batch per request is required for magic v2 and above")


TIMESTAMP_REJECTED = "One or more records have been rejected due to invalid timestamp"
_NO_TIMESTAMP = -1


def _long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (wrapping at 64 bits)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def check_timestamps(header: BatchHeader, records: list[tuple[int, int]], now_ms: int,
                     before_max_ms: int, after_max_ms: int) -> None:
    """``LogValidator.validateTimestamp`` for a CreateTime topic: every record within the topic's window.

    ``message.timestamp.after.max.ms`` is one hour by default since Kafka 4.0 (KIP-1030), so a
    producer clock an hour ahead is refused: INVALID_TIMESTAMP with one record error per record.
    """
    errors: list[tuple[int, str]] = []
    for index, (offset_delta, timestamp_delta) in enumerate(records):
        timestamp = _long(header.base_timestamp + timestamp_delta)
        if timestamp == _NO_TIMESTAMP:
            continue
        if timestamp - now_ms > after_max_ms or now_ms - timestamp > before_max_ms:
            errors.append((index, f"Timestamp {timestamp} of message with offset {header.base_offset + offset_delta} "
                                  f"is out of range. The timestamp should be within [{_long(now_ms - before_max_ms)}, "
                                  f"{_long(now_ms + after_max_ms)}]"))
    if errors:
        raise RecordErrors(ErrorCode.INVALID_TIMESTAMP, TIMESTAMP_REJECTED, errors)
