"""The v2 batch header reader, validator and rewriter (``record_batch.py``)."""

from __future__ import annotations

import struct

import pytest

from rebalance_lab.coordinator import record_batch
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from tests.unit.dataplane.batches import make_batch


def test_crc32c_matches_the_castagnoli_check_value() -> None:
    assert record_batch.crc32c(b"123456789") == 0xE3069283


def test_the_pure_python_crc32c_agrees_with_the_fast_one(monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_batch([b"a" * 100, b"b"])
    fast = record_batch.crc32c(data)
    monkeypatch.setattr(record_batch, "_fast_crc32c", None)
    assert record_batch.crc32c(data) == fast


def test_a_batch_header_is_read_field_by_field() -> None:
    raw = make_batch([b"x", b"y", b"z"], [10, 30, 20], producer_id=7, producer_epoch=1, base_sequence=5)
    header = record_batch.parse_header(raw)
    assert (header.magic, header.last_offset_delta, header.record_count) == (2, 2, 3)
    assert (header.base_timestamp, header.max_timestamp) == (10, 30)
    assert (header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence) == (7, 1, 5, 7)
    assert header.size == len(raw)


def test_a_bad_crc_is_corrupt_message() -> None:
    raw = bytearray(make_batch([b"x"]))
    raw[-1] ^= 0xFF
    with pytest.raises(KafkaError) as info:
        record_batch.split_batches(bytes(raw))
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


def test_a_truncated_batch_is_corrupt_message() -> None:
    with pytest.raises(KafkaError) as info:
        record_batch.split_batches(make_batch([b"x"])[:-3])
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


def test_magic_other_than_two_is_invalid_record() -> None:
    raw = bytearray(make_batch([b"x"]))
    raw[16] = 1
    with pytest.raises(KafkaError) as info:
        record_batch.split_batches(bytes(raw))
    assert info.value.code == ErrorCode.INVALID_RECORD


def test_rewriting_offset_and_epoch_keeps_the_clients_crc() -> None:
    raw = make_batch([b"x", b"y"])
    stored = record_batch.rewrite(raw, 42, 3, None)
    header = record_batch.parse_header(stored)
    original_crc = record_batch.parse_header(raw).crc
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (42, 3, original_crc)
    assert stored[21:] == raw[21:]  # attributes onward, the CRC'd region, untouched
    record_batch.split_batches(stored)  # still valid


def test_log_append_time_sets_the_type_bit_and_max_timestamp_and_a_fresh_crc() -> None:
    stored = record_batch.rewrite(make_batch([b"x"]), 0, 0, 99_999)
    header = record_batch.parse_header(stored)
    assert header.attributes & 0x08 and header.max_timestamp == 99_999
    record_batch.split_batches(stored)  # CRC recomputed


@pytest.mark.parametrize("gzipped", [False, True])
def test_record_timestamps_are_read_from_plain_and_gzip_batches(gzipped: bool) -> None:
    raw = record_batch.rewrite(make_batch([b"a", b"b", b"c"], [5, 9, 7], gzipped=gzipped), 10, 0, None)
    header = record_batch.parse_header(raw)
    assert record_batch.record_timestamps(header, raw) == [(10, 5), (11, 9), (12, 7)]


def test_record_timestamps_of_an_unreadable_codec_are_unknown() -> None:
    raw = bytearray(make_batch([b"a"]))
    struct.pack_into(">h", raw, 21, 3)  # lz4 (CRC not rechecked by this reader)
    header = record_batch.parse_header(bytes(raw))
    assert record_batch.record_timestamps(header, bytes(raw)) is None
