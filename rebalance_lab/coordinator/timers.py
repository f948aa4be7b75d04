"""Keyed timers on an injected clock (STYLE.md principle 3).

``schedule(key, at, payload)`` replaces any pending timer with the same key, as
Kafka's ``CoordinatorTimer.schedule`` does; ``cancel(key)`` removes it. The queue
holds no callbacks and never reads a clock: the owner asks which timers are due
at a ``now`` it supplies, and runs them itself.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")


@dataclass(frozen=True)
class Due(Generic[K, P]):
    key: K
    at: int
    payload: P


class TimerQueue(Generic[K, P]):
    def __init__(self) -> None:
        self._entries: dict[K, tuple[int, int, P]] = {}
        self._heap: list[tuple[int, int, K]] = []
        self._seq = itertools.count()

    def schedule(self, key: K, at: int, payload: P) -> None:
        seq = next(self._seq)
        self._entries[key] = (at, seq, payload)
        heapq.heappush(self._heap, (at, seq, key))

    def cancel(self, key: K) -> bool:
        return self._entries.pop(key, None) is not None

    def is_scheduled(self, key: K) -> bool:
        return key in self._entries

    def deadline(self, key: K) -> int | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: int) -> list[Due[K, P]]:
        """Remove and return every timer with ``at <= now``, earliest first (ties: scheduling order)."""
        due: list[Due[K, P]] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return due
            at, _seq, key = heapq.heappop(self._heap)
            _at, _s, payload = self._entries.pop(key)
            due.append(Due(key, at, payload))

    def __len__(self) -> int:
        return len(self._entries)

    def _drop_stale(self) -> None:
        # A rescheduled or cancelled key leaves its old heap entry behind; skip those lazily.
        while self._heap:
            _at, seq, key = self._heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry[1] == seq:
                return
            heapq.heappop(self._heap)
