"""Injected clocks: the coordinator core never reads the time itself (STYLE.md principle 3)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    @property
    def manual(self) -> bool: ...


class SystemClock:
    """Wall-clock milliseconds, as the real broker's ``Time.SYSTEM.milliseconds()``."""

    manual = False

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; timers fire only when a test advances it."""

    manual = True

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError(f"cannot move a clock backwards by {ms} ms")
        self._now += ms
        return self._now
