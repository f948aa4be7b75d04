"""The ``--record`` file: lines written through to disk as they come, and a write error reported, never raised.

Each line is flushed as soon as it is written, so nothing per event waits in memory (the file's own buffer
holds at most the line being written) and a killed process loses at most that line. A write error (a full
disk, a closed pipe) must neither stop the emulator nor vanish: it is logged once with the file's name, the
lines after it are counted as lost, the count is logged again when the file is closed, and :meth:`failure`
says it for ``serve`` (which then exits with an error) and ``Emulator.recording_status()``.
Standard library only: ``serve`` imports this before anything else of ``observe``.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("rebalance_lab.recorder")


class RecordingFile:
    def __init__(self, path: str) -> None:
        self.name = path
        self._out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close(), when the server stops
        self.written = 0
        self.lost = 0
        self.error: OSError | None = None

    def write_line(self, line: str) -> None:
        if self.error is not None:
            self.lost += 1
            return
        try:
            self._out.write(line + "\n")
            self._out.flush()
        except OSError as exc:
            self.error = exc
            self.lost += 1
            log.error("the recording %s failed after %d events: %s; later events are not recorded", self.name,
                      self.written, exc)
        else:
            self.written += 1

    def close(self) -> None:
        """Close the file, never raising (the server is stopping); log what was lost, if anything."""
        try:
            self._out.close()
        except OSError as exc:  # the last flush failed too
            self.error = self.error or exc
        if self.error is not None:
            log.error("the recording %s is incomplete: %s", self.name, self.failure())

    def failure(self) -> str | None:
        """Why the recording is incomplete, or None when every event was written."""
        if self.error is None:
            return None
        return f"{self.written} events written, {self.lost} not ({self.error.strerror or self.error})"

    def status(self) -> dict[str, Any]:
        return {"path": self.name, "written": self.written, "lost": self.lost, "error": self.failure()}
