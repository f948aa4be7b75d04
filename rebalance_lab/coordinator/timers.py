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
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")


@dataclass(frozen=True)
class Due(Generic[K, P]):
    key: K
    at: int
    payload: P


class TimerQueue(Generic[K, P]):
    """Keyed timers in a heap; a timer moved later (a session timer on every heartbeat) costs no heap push.

    Each key has one *anchor* in the heap, at or before its deadline. Moving a deadline later only
    updates the key's entry; when the anchor reaches the top it is pushed again at the real deadline.
    Moving it earlier pushes a new anchor (the old one is dropped when it surfaces). The order is the
    same as pushing on every schedule: earliest deadline first, ties in the order of the last schedule.
    """

    def __init__(self) -> None:
        # key -> [deadline, seq, payload, anchor deadline, anchor seq]
        self._entries: dict[K, list[Any]] = {}
        self._heap: list[tuple[int, int, K]] = []
        self._seq = itertools.count()
        # The earliest deadline, kept until a timer changes: the shell asks after every turn and the group
        # service after every request, and most requests (a rejoin, a sync) set no timer (issue 22).
        self._earliest: int | None = None
        self._earliest_known = False

    def schedule(self, key: K, at: int, payload: P) -> None:
        self._earliest_known = False
        seq = next(self._seq)
        entry = self._entries.get(key)
        if entry is not None and entry[3] <= at:  # its anchor surfaces in time: no push
            entry[0], entry[1], entry[2] = at, seq, payload
            return
        self._entries[key] = [at, seq, payload, at, seq]
        heapq.heappush(self._heap, (at, seq, key))

    def cancel(self, key: K) -> bool:
        if self._entries.pop(key, None) is None:
            return False
        self._earliest_known = False
        return True

    def is_scheduled(self, key: K) -> bool:
        return key in self._entries

    def deadline(self, key: K) -> int | None:
        entry = self._entries.get(key)
        return None if entry is None else int(entry[0])

    def next_deadline(self) -> int | None:
        if not self._earliest_known:
            self._drop_stale()
            self._earliest = self._heap[0][0] if self._heap else None
            self._earliest_known = True
        return self._earliest

    def pop_due(self, now: int) -> list[Due[K, P]]:
        """Remove and return every timer with ``at <= now``, earliest first (ties: scheduling order)."""
        due: list[Due[K, P]] = []
        self._earliest_known = False
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return due
            at, _seq, key = heapq.heappop(self._heap)
            due.append(Due(key, at, self._entries.pop(key)[2]))

    def __len__(self) -> int:
        return len(self._entries)

    def _drop_stale(self) -> None:
        """Until the top is a live timer at its own deadline: drop old anchors, push moved timers again."""
        heap, entries = self._heap, self._entries
        while heap:
            at, seq, key = heap[0]
            entry = entries.get(key)
            if entry is None or entry[3] != at or entry[4] != seq:
                heapq.heappop(heap)  # cancelled, or an anchor replaced by an earlier one
            elif entry[0] == at and entry[1] == seq:
                return
            else:  # moved later (or rescheduled at the same instant): its place is at the real deadline
                entry[3], entry[4] = entry[0], entry[1]
                heapq.heapreplace(heap, (entry[0], entry[1], key))
