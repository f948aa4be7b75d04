"""A log of our own records (one JSON object each, framed by length and CRC-32C), compacted at start-up.

Kafka compacts ``__consumer_offsets`` with its log cleaner while it runs; this log is rewritten whole
instead, at start-up and whenever its owner finds it has grown well past its live state: the live state
becomes a new segment that begins with a ``compacted`` marker, written to a temporary file, fsynced and
renamed, and only then are the older segments removed.
A crash between the rename and the removal leaves both; the marker tells the loader to forget what
came before it, so the state is read once either way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rebalance_lab.storage import segments
from rebalance_lab.storage.segments import FlushPolicy, SegmentLog, StorageError

_MARKER = {"compacted": True}


class RecordLog:
    def __init__(self, directory: Path, policy: FlushPolicy) -> None:
        self.directory = directory
        self.policy = policy
        self._log: SegmentLog | None = None
        self._next = 0
        self.compacted_bytes = 0  # the size of the live state at the last compaction
        self.bytes_since_compaction = 0

    def load(self) -> list[dict[str, Any]]:
        """Every record since the last compaction marker, oldest first (torn tail recovered)."""
        for leftover in self.directory.glob("*.tmp"):
            leftover.unlink()
        log, frames = segments.open_log(self.directory, segments.check_own_frame, self.policy)
        self._log = log
        found = segments.segment_files(self.directory)
        self._next = (found[-1][0] if found else 0) + _count_in_last(found, frames)
        records: list[dict[str, Any]] = []
        for frame, payload in zip(frames, segments.own_payloads(frames), strict=True):
            record = _parse(payload, frame)
            if record == _MARKER:
                records.clear()
            else:
                records.append(record)
        return records

    def append(self, record: dict[str, Any]) -> None:
        if self._log is None:
            raise RuntimeError("load() the record log first")
        frame = segments.own_frame(_encode(record))
        self._log.append(frame, self._next, 1)
        self._next += 1
        self.bytes_since_compaction += len(frame)

    def compact(self, records: list[dict[str, Any]]) -> None:
        """Replace every segment by one holding ``records`` (the live state)."""
        if self._log is not None:
            self._log.close()
        old = segments.segment_files(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        base = self._next
        data = b"".join(segments.own_frame(_encode(r)) for r in [_MARKER, *records])
        target = self.directory / segments.segment_name(base)
        temporary = target.with_suffix(".tmp")
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
        segments._fsync_directory(self.directory)
        for _base, path in old:
            if path != target:
                path.unlink()
        self._next = base + len(records) + 1
        self.compacted_bytes = len(data)
        self.bytes_since_compaction = 0
        self._log = SegmentLog(self.directory, self.policy)
        self._log.reopen_last(target)

    @property
    def segment_log(self) -> SegmentLog | None:
        return self._log

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


def _count_in_last(found: list[tuple[int, Path]], frames: list[bytes]) -> int:
    """How many records the last segment holds (the offsets go on from there)."""
    if not found:
        return 0
    size = found[-1][1].stat().st_size
    count, total = 0, 0
    for frame in reversed(frames):
        if total >= size:
            break
        total += len(frame)
        count += 1
    return count


def _encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def _parse(payload: bytes, frame: bytes) -> dict[str, Any]:
    try:
        record = json.loads(payload)
    except ValueError as exc:
        raise StorageError(f"a record passes its CRC but is not JSON ({len(frame)} bytes): {exc}") from exc
    if not isinstance(record, dict):
        raise StorageError("a record passes its CRC but is not a JSON object")
    return record
