"""The in-memory partition log (``logs.py``): appends, reads, offsets for timestamps."""

from __future__ import annotations

import pytest

from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.logs import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    PartitionLog,
)
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from tests.unit.dataplane.batches import make_batch


def _log_with(*batches: bytes) -> PartitionLog:
    log = PartitionLog(leader_epoch=4)
    for batch in batches:
        log.append(batch, now_ms=1_000_000)
    return log


def _offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.base_offset + h.last_offset_delta) for h, _ in record_batch.split_batches(data)]


def test_appends_assign_consecutive_offsets_and_move_the_high_watermark() -> None:
    log = PartitionLog()
    first = log.append(make_batch([b"a", b"b"]), now_ms=0)
    second = log.append(make_batch([b"c"]), now_ms=0)
    assert (first.base_offset, second.base_offset) == (0, 2)
    assert (log.log_end_offset, log.high_watermark, log.last_stable_offset) == (3, 3, 3)
    assert first.log_append_time == -1


def test_the_stored_batch_is_the_clients_bytes_with_offset_and_epoch_rewritten() -> None:
    sent = make_batch([b"a", b"b"], base_offset=77)
    log = _log_with(make_batch([b"z"]), sent)
    stored = log.read(1, 1 << 20, True)
    assert stored[:8] == (1).to_bytes(8, "big")
    assert record_batch.parse_header(stored).partition_leader_epoch == 4
    assert stored[12 + 4:] == sent[12 + 4:]  # magic onward byte-identical, CRC included


def test_log_append_time_topics_stamp_the_batch_with_now() -> None:
    log = PartitionLog()
    result = log.append(make_batch([b"a"]), now_ms=123_456, log_append_time=True)
    assert result.log_append_time == 123_456
    assert record_batch.parse_header(log.read(0, 1 << 20, True)).max_timestamp == 123_456


def test_more_than_one_batch_in_a_produce_is_invalid_record() -> None:
    with pytest.raises(KafkaError) as info:
        PartitionLog().append(make_batch([b"a"]) + make_batch([b"b"]), now_ms=0)
    assert info.value.code == ErrorCode.INVALID_RECORD


def test_a_batch_over_max_message_bytes_is_rejected() -> None:
    with pytest.raises(KafkaError) as info:
        PartitionLog().append(make_batch([b"x" * 500]), now_ms=0, max_message_bytes=100)
    assert info.value.code == ErrorCode.MESSAGE_SIZE_TOO_LARGE


def test_an_idempotent_retry_gets_the_first_appends_offset_and_is_not_stored_twice() -> None:
    log = PartitionLog()
    batch = make_batch([b"a", b"b"], producer_id=5, producer_epoch=0, base_sequence=0)
    assert log.append(batch, now_ms=0).base_offset == 0
    log.append(make_batch([b"c"], producer_id=5, producer_epoch=0, base_sequence=2), now_ms=0)
    assert log.append(batch, now_ms=0).base_offset == 0
    assert log.log_end_offset == 3


def test_read_returns_whole_batches_from_the_one_holding_the_offset() -> None:
    log = _log_with(make_batch([b"a", b"b", b"c"]), make_batch([b"d"]))
    assert _offsets(log.read(1, 1 << 20, True)) == [(0, 2), (3, 3)]
    assert _offsets(log.read(3, 1 << 20, True)) == [(3, 3)]
    assert log.read(4, 1 << 20, True) == b""


def test_read_stops_before_a_batch_that_would_exceed_max_bytes() -> None:
    small = make_batch([b"a"])
    log = _log_with(small, make_batch([b"b"]), make_batch([b"c"]))
    assert _offsets(log.read(0, 2 * len(small) + 1, True)) == [(0, 0), (1, 1)]


def test_the_first_batch_is_returned_even_when_larger_than_max_bytes_if_min_one_is_set() -> None:
    log = _log_with(make_batch([b"x" * 1000]))
    assert _offsets(log.read(0, 10, True)) == [(0, 0)]
    assert log.read(0, 10, False) == b""


def test_reads_stop_at_the_upper_bound() -> None:
    log = _log_with(make_batch([b"a"]), make_batch([b"b"]))
    assert _offsets(log.read(0, 1 << 20, True, upper=1)) == [(0, 0)]


@pytest.mark.parametrize("offset", [-1, 3])
def test_an_offset_outside_the_log_is_out_of_range(offset: int) -> None:
    log = _log_with(make_batch([b"a", b"b"]))
    with pytest.raises(KafkaError) as info:
        log.read(offset, 100, True)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_reading_at_the_log_end_is_empty_not_an_error() -> None:
    assert _log_with(make_batch([b"a"])).read(1, 100, True) == b""


def test_special_timestamps_give_earliest_and_latest_offsets() -> None:
    log = _log_with(make_batch([b"a", b"b"]))
    latest = log.offset_for_timestamp(LATEST_TIMESTAMP)
    earliest = log.offset_for_timestamp(EARLIEST_TIMESTAMP)
    assert latest is not None and (latest.timestamp, latest.offset, latest.leader_epoch) == (-1, 2, 4)
    assert earliest is not None and (earliest.timestamp, earliest.offset) == (-1, 0)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_timestamp_finds_the_first_record_at_or_after_it(gzipped: bool) -> None:
    log = _log_with(make_batch([b"a", b"b"], [100, 200], gzipped=gzipped),
                    make_batch([b"c", b"d"], [300, 250], gzipped=gzipped))
    found = log.offset_for_timestamp(150)
    assert found is not None and (found.timestamp, found.offset) == (200, 1)
    found = log.offset_for_timestamp(260)
    assert found is not None and (found.timestamp, found.offset) == (300, 2)
    assert log.offset_for_timestamp(301) is None


def test_max_timestamp_finds_the_record_holding_it_kip_734() -> None:
    log = _log_with(make_batch([b"a", b"b"], [100, 200]), make_batch([b"c", b"d", b"e"], [300, 500, 400]))
    found = log.offset_for_timestamp(MAX_TIMESTAMP)
    assert found is not None and (found.timestamp, found.offset, found.leader_epoch) == (500, 3, 4)


def test_max_timestamp_of_an_empty_log_finds_nothing() -> None:
    assert PartitionLog().offset_for_timestamp(MAX_TIMESTAMP) is None
