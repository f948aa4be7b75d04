"""The segment files: Kafka's batch format in partition logs, our own frames elsewhere, and recovery.

A torn tail (the last frame of the last segment cut short, or its last page never written) is
truncated with a log line; anything else that fails its length or CRC check stops the start with an
error naming the file, because truncating there would drop acknowledged data silently.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from rebalance_lab.coordinator.logs import PartitionLog
from rebalance_lab.storage.record_log import RecordLog
from rebalance_lab.storage.segments import (
    DirectoryLock,
    FlushPolicy,
    SegmentLog,
    StorageError,
    check_batch,
    check_own_frame,
    open_log,
    own_frame,
    own_payloads,
    segment_name,
)
from tests.unit.dataplane.batches import make_batch

NEVER = FlushPolicy()


def _stored_batches(count: int, per_batch: int = 3) -> list[bytes]:
    """Batches as the in-memory log stores them: offsets assigned, leader epoch stamped."""
    log = PartitionLog(leader_epoch=4)
    for i in range(count):
        log.append(make_batch([b"v%d-%d" % (i, j) for j in range(per_batch)]), now_ms=0)
    return [b.data for b in log.batches]


def _write(directory: Path, batches: list[bytes], segment_bytes: int = 1 << 30) -> SegmentLog:
    log, _ = open_log(directory, check_batch, NEVER, segment_bytes)
    offset = 0
    for data in batches:
        log.append(data, offset, 3)
        offset += 3
    log.close()
    return log


def test_a_partition_segment_holds_the_stored_batches_byte_for_byte(tmp_path: Path) -> None:
    batches = _stored_batches(4)
    _write(tmp_path, batches)
    assert (tmp_path / segment_name(0)).read_bytes() == b"".join(batches)
    _log, frames = open_log(tmp_path, check_batch, NEVER)
    assert frames == batches


def test_segments_roll_at_the_segment_size_and_are_named_by_their_base_offset(tmp_path: Path) -> None:
    batches = _stored_batches(5)
    _write(tmp_path, batches, segment_bytes=2 * len(batches[0]))
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [segment_name(0), segment_name(6), segment_name(12)]
    _log, frames = open_log(tmp_path, check_batch, NEVER)
    assert frames == batches


def test_a_batch_cut_short_at_the_end_is_truncated_with_a_log_line(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    batches = _stored_batches(3)
    _write(tmp_path, batches)
    path = tmp_path / segment_name(0)
    whole = path.read_bytes()
    path.write_bytes(whole + batches[0][:40])  # a fourth batch, partly written when the process died
    with caplog.at_level(logging.WARNING, "rebalance_lab.storage"):
        log, frames = open_log(tmp_path, check_batch, NEVER)
    assert frames == batches
    assert path.read_bytes() == whole
    assert f"{path}: torn write at byte {len(whole)}: truncating 40 bytes" in caplog.text
    log.append(batches[0], 9, 3)  # appends continue where the valid data ends
    log.close()
    assert path.read_bytes() == whole + batches[0]


def test_a_last_batch_whose_bytes_fail_the_crc_is_a_torn_write(tmp_path: Path) -> None:
    batches = _stored_batches(3)
    damaged = bytearray(batches[-1])
    damaged[-1] ^= 0xFF  # the page with the end of the batch never reached the disk
    _write(tmp_path, [*batches[:-1], bytes(damaged)])
    _log, frames = open_log(tmp_path, check_batch, NEVER)
    assert frames == batches[:-1]


def test_zeros_after_the_last_batch_are_a_torn_write(tmp_path: Path) -> None:
    batches = _stored_batches(2)
    _write(tmp_path, batches)
    path = tmp_path / segment_name(0)
    path.write_bytes(path.read_bytes() + bytes(4096))  # the file system extended the file, the data is lost
    _log, frames = open_log(tmp_path, check_batch, NEVER)
    assert frames == batches and path.stat().st_size == sum(map(len, batches))


def test_a_damaged_batch_before_valid_data_stops_the_start_with_the_file_named(tmp_path: Path) -> None:
    batches = _stored_batches(3)
    damaged = bytearray(batches[1])
    damaged[-1] ^= 0xFF
    _write(tmp_path, [batches[0], bytes(damaged), batches[2]])
    path = tmp_path / segment_name(0)
    before = path.read_bytes()
    with pytest.raises(StorageError, match=re.escape(f"{path}: corrupt data at byte {len(batches[0])} of")):
        open_log(tmp_path, check_batch, NEVER)
    assert path.read_bytes() == before  # nothing is truncated: the operator decides


def test_a_torn_batch_in_an_older_segment_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    batches = _stored_batches(4)
    _write(tmp_path, batches, segment_bytes=2 * len(batches[0]))
    first = tmp_path / segment_name(0)
    first.write_bytes(first.read_bytes()[:-5])
    with pytest.raises(StorageError, match=re.escape(str(first))):
        open_log(tmp_path, check_batch, NEVER)


def test_a_file_in_a_log_directory_not_named_by_an_offset_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.log").write_text("hello")
    with pytest.raises(StorageError, match=r"notes\.log: not a segment file"):
        open_log(tmp_path, check_batch, NEVER)


def test_own_frames_carry_a_length_and_a_crc(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, check_own_frame, NEVER)
    for i in range(3):
        log.append(own_frame(b'{"n":%d}' % i), i, 1)
    log.close()
    path = tmp_path / segment_name(0)
    path.write_bytes(path.read_bytes()[:-2])
    _log, frames = open_log(tmp_path, check_own_frame, NEVER)
    assert own_payloads(frames) == [b'{"n":0}', b'{"n":1}']


def test_fsync_follows_the_flush_message_count(tmp_path: Path) -> None:
    log, _ = open_log(tmp_path, check_own_frame, FlushPolicy(messages=3))
    log.append(own_frame(b"{}"), 0, 2)
    assert log.unflushed == 2
    log.append(own_frame(b"{}"), 1, 1)
    assert log.unflushed == 0  # the third message reached flush.messages: fsynced
    log.close()


def test_flush_settings_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FlushPolicy(messages=0)
    with pytest.raises(ValueError, match="at least 1 ms"):
        FlushPolicy(interval_ms=0)


def test_a_compacted_record_log_forgets_what_came_before_its_marker(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, NEVER)
    log.load()
    for i in range(5):
        log.append({"n": i})
    log.compact([{"n": 4}])
    log.append({"n": 5})
    log.close()
    assert [p.name for p in sorted(tmp_path.glob("*.log"))] == [segment_name(5)]
    again = RecordLog(tmp_path, NEVER)
    assert again.load() == [{"n": 4}, {"n": 5}]
    again.append({"n": 6})
    again.close()
    assert RecordLog(tmp_path, NEVER).load() == [{"n": 4}, {"n": 5}, {"n": 6}]


def test_old_segments_left_by_a_crash_during_compaction_are_not_read_twice(tmp_path: Path) -> None:
    log = RecordLog(tmp_path, NEVER)
    log.load()
    log.append({"n": 1})
    log.close()
    kept = (tmp_path / segment_name(0)).read_bytes()
    log = RecordLog(tmp_path, NEVER)
    log.load()
    log.compact([{"n": 1}])
    log.close()
    (tmp_path / segment_name(0)).write_bytes(kept)  # the old segment survived: the crash came before its unlink
    assert RecordLog(tmp_path, NEVER).load() == [{"n": 1}]


def test_a_second_process_cannot_use_a_locked_data_directory(tmp_path: Path) -> None:
    lock = DirectoryLock(tmp_path)
    try:
        with pytest.raises(StorageError, match="in use by another process"):
            DirectoryLock(tmp_path)
    finally:
        lock.release()
    DirectoryLock(tmp_path).release()
