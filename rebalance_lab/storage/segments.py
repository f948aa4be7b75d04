"""Append-only segment files: one directory per log, files named by the base offset of their first entry.

A write goes to the file at once with one ``os.write`` (no user-space buffer), so a ``kill -9`` of the
process loses nothing that was acknowledged: the bytes are in the OS page cache. Only a machine crash
can lose what was not yet fsynced, and when that happens is the :class:`FlushPolicy`, Kafka's
``flush.messages`` and ``flush.ms`` (both "never" by default: Kafka relies on replication and the
page cache, ``LogConfig``).

Recovery (``LogSegment.recover``): every frame is checked by its length and CRC. An incomplete or
invalid frame at the end of the last segment is a torn write: the file is truncated there, with a log
line. Anything else that does not check out is a corrupt file: a :class:`StorageError` names it and the
byte position, rather than silently dropping acknowledged data.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rebalance_lab.coordinator import record_batch

log = logging.getLogger("rebalance_lab.storage")

SEGMENT_SUFFIX = ".log"
DEFAULT_SEGMENT_BYTES = 1_073_741_824  # log.segment.bytes
INCOMPLETE = 0  # a frame check: the frame runs past the end of the data
INVALID = -1  # a frame check: complete but wrong (length out of range, CRC mismatch)

# A frame check: (data, position) -> the frame's size, INCOMPLETE or INVALID.
FrameCheck = Callable[[memoryview, int], int]


class StorageError(Exception):
    """A data directory that cannot be used; the message names the file."""


@dataclass(frozen=True)
class FlushPolicy:
    """When written data is fsynced. None: never by count or time (Kafka's default for both)."""

    messages: int | None = None  # flush.messages: fsync once this many messages are unflushed (1: every write)
    interval_ms: int | None = None  # flush.ms: fsync data that has waited this long

    def __post_init__(self) -> None:
        if self.messages is not None and self.messages < 1:
            raise ValueError(f"the flush message count must be at least 1, not {self.messages}")
        if self.interval_ms is not None and self.interval_ms < 1:
            raise ValueError(f"the flush interval must be at least 1 ms, not {self.interval_ms}")

    @property
    def syncs(self) -> bool:
        return self.messages is not None or self.interval_ms is not None


# -- frame formats -----------------------------------------------------------------------------------

_OWN = struct.Struct(">II")  # our own records: length of the payload, CRC-32C of the payload
OWN_OVERHEAD = _OWN.size
_MAX_OWN_PAYLOAD = 1 << 30


def own_frame(payload: bytes) -> bytes:
    return _OWN.pack(len(payload), record_batch.crc32c(payload)) + payload


def check_own_frame(data: memoryview, pos: int) -> int:
    if pos + OWN_OVERHEAD > len(data):
        return INCOMPLETE
    length, crc = _OWN.unpack_from(data, pos)
    if length > _MAX_OWN_PAYLOAD:
        return INVALID
    end = pos + OWN_OVERHEAD + length
    if end > len(data):
        return INCOMPLETE
    return end - pos if record_batch.crc32c(data[pos + OWN_OVERHEAD:end]) == crc else INVALID


def own_payloads(frames: list[bytes]) -> list[bytes]:
    return [frame[OWN_OVERHEAD:] for frame in frames]


_BATCH_LENGTH = struct.Struct(">qi")
_MIN_BATCH_LENGTH = record_batch.HEADER_SIZE - record_batch.LOG_OVERHEAD
_CRC = struct.Struct(">I")


def check_batch(data: memoryview, pos: int) -> int:
    """A magic v2 record batch, checked as ``DefaultRecordBatch.ensureValid`` does (size, magic, CRC-32C)."""
    if pos + record_batch.LOG_OVERHEAD > len(data):
        return INCOMPLETE
    _base, length = _BATCH_LENGTH.unpack_from(data, pos)
    if length < _MIN_BATCH_LENGTH:
        return INVALID
    end = pos + record_batch.LOG_OVERHEAD + length
    if end > len(data):
        return INCOMPLETE
    if data[pos + 16] != 2:
        return INVALID
    (crc,) = _CRC.unpack_from(data, pos + 17)
    return end - pos if record_batch.crc32c(data[pos + 21:end]) == crc else INVALID


# -- one log -------------------------------------------------------------------------------------------


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


def segment_files(directory: Path) -> list[tuple[int, Path]]:
    """The directory's segments by base offset (a name that is not a base offset is a StorageError)."""
    found = []
    for path in directory.glob(f"*{SEGMENT_SUFFIX}"):
        if not path.stem.isdigit():
            raise StorageError(f"{path}: not a segment file (its name must be its base offset)")
        found.append((int(path.stem), path))
    return sorted(found)


@dataclass
class SegmentLog:
    """An append-only log in one directory. ``open_log`` recovers it and returns its frames."""

    directory: Path
    policy: FlushPolicy
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    _fd: int = -1
    _size: int = 0
    unflushed: int = 0  # messages written since the last fsync
    closed_segments: list[Path] = field(default_factory=list)

    def append(self, data: bytes, base_offset: int, messages: int) -> None:
        """Write ``data`` (whose first entry has ``base_offset``) now; fsync when the policy says so."""
        if self._fd < 0 or (self._size and self._size + len(data) > self.segment_bytes):
            self._roll(base_offset)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(data)
        self.unflushed += messages
        if self.policy.messages is not None and self.unflushed >= self.policy.messages:
            self.flush()

    def flush(self) -> None:
        if self._fd >= 0 and self.unflushed:
            os.fsync(self._fd)
        self.unflushed = 0

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1

    def _roll(self, base_offset: int) -> None:
        """A new segment named by its first offset (``UnifiedLog.roll``); the old one is fsynced first."""
        if self._fd >= 0:
            self.close()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / segment_name(base_offset)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size
        if self.policy.syncs:
            _fsync_directory(self.directory)

    def reopen_last(self, path: Path) -> None:
        """Keep appending to the recovered last segment."""
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size


def open_log(directory: Path, check: FrameCheck, policy: FlushPolicy,
             segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> tuple[SegmentLog, list[bytes]]:
    """The log of ``directory`` ready to append, and every valid frame in it, oldest first."""
    segment_log = SegmentLog(directory, policy, segment_bytes)
    frames: list[bytes] = []
    segments = segment_files(directory) if directory.is_dir() else []
    for index, (_base, path) in enumerate(segments):
        frames.extend(read_segment(path, check, last=index == len(segments) - 1))
    if segments:
        segment_log.reopen_last(segments[-1][1])
    return segment_log, frames


def read_segment(path: Path, check: FrameCheck, *, last: bool) -> list[bytes]:
    """The frames of one segment; a torn tail of the last segment is truncated (and logged)."""
    data = path.read_bytes()
    view = memoryview(data)
    frames: list[bytes] = []
    pos = 0
    while pos < len(data):
        size = check(view, pos)
        if size > 0:
            frames.append(data[pos:pos + size])
            pos += size
            continue
        if not last or not _is_torn_tail(view, pos, size, check):
            raise StorageError(f"{path}: corrupt data at byte {pos} of {len(data)} (a frame fails its length or "
                               "CRC check and is not a torn write at the end of the last segment); "
                               "move the file away or restore it to start")
        log.warning("%s: torn write at byte %d: truncating %d bytes (a partially written last record)",
                    path, pos, len(data) - pos)
        os.truncate(path, pos)
        break
    return frames


def _is_torn_tail(view: memoryview, pos: int, verdict: int, check: FrameCheck) -> bool:
    """Incomplete, or an invalid frame ending exactly at the end of the file, or zeros to the end (a page
    the file system extended but never wrote)."""
    if verdict == INCOMPLETE:
        return True
    if not any(view[pos:]):
        return True
    # an invalid last frame: the bytes after it would be another frame if the file went on
    return _frame_end(view, pos, check) == len(view)


def _frame_end(view: memoryview, pos: int, check: FrameCheck) -> int:
    """Where the frame at ``pos`` claims to end (for the torn-tail test of an invalid frame)."""
    if check is check_own_frame:
        length: int = _OWN.unpack_from(view, pos)[0]
        return pos + OWN_OVERHEAD + length
    batch_length: int = _BATCH_LENGTH.unpack_from(view, pos)[1]
    return pos + record_batch.LOG_OVERHEAD + batch_length


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DirectoryLock:
    """An exclusive lock on the data directory (Kafka's ``.lock``): two processes never share one."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            raise StorageError(f"{directory}: the data directory is in use by another process (.lock is held)") \
                from exc

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
