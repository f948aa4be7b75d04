"""The last lines of the narration, kept in memory (``Emulator(keep_narration=N)``).

The pytest plugin attaches them to the report of a failed test, so a failure shows what the
coordinator did last even when nobody asked for ``explain``. The narrator writes to this
stream as to any other; only the newest ``limit`` lines are kept.
"""

from __future__ import annotations

import io
from collections import deque


class NarrationTail(io.StringIO):
    """A text stream that keeps the newest ``limit`` complete lines written to it."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self._lines: deque[str] = deque(maxlen=limit)
        self._partial = ""

    def write(self, text: str) -> int:
        *complete, self._partial = (self._partial + text).split("\n")
        self._lines.extend(complete)
        return len(text)

    def lines(self) -> list[str]:
        return [*self._lines, *([self._partial] if self._partial else [])]
