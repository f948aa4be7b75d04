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
        # The earliest deadline (None: no timer) while _known: at most the real one, and equal to it while _exact.
        # The shell asks after every request and most requests set no timer or move one later, which cannot make the
        # earliest earlier: the bound stands (deadline_bound), and the heap's stale anchors wait for the next exact
        # question (next_deadline, pop_due) rather than being pushed again one request at a time (issue 22).
        self._earliest: int | None = None
        self._known = True
        self._exact = True

    def schedule(self, key: K, at: int, payload: P) -> None:
        seq = next(self._seq)
        entry = self._entries.get(key)
        if self._known:
            earliest = self._earliest
            if entry is not None and at >= entry[0]:
                if entry[0] == earliest:  # the earliest itself moved later: the bound stands, no longer exact
                    self._exact = False
            elif earliest is None or at < earliest:
                self._earliest = at  # earlier than every other: exactly the earliest if the bound was exact
        if entry is not None and entry[3] <= at:  # its anchor surfaces in time: no push
            entry[0], entry[1], entry[2] = at, seq, payload
            return
        self._entries[key] = [at, seq, payload, at, seq]
        heapq.heappush(self._heap, (at, seq, key))

    def cancel(self, key: K) -> bool:
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        if not self._entries:
            self._earliest, self._known, self._exact = None, True, True
        elif entry[0] == self._earliest:
            self._exact = False  # a later one is the earliest now: the bound stands
        return True

    def is_scheduled(self, key: K) -> bool:
        return key in self._entries

    def deadline(self, key: K) -> int | None:
        entry = self._entries.get(key)
        return None if entry is None else int(entry[0])

    def next_deadline(self) -> int | None:
        """The earliest deadline, or None when no timer is pending."""
        if not (self._known and self._exact):
            self._drop_stale()
            self._earliest = self._heap[0][0] if self._heap else None
            self._known = self._exact = True
        return self._earliest

    def deadline_bound(self) -> int | None:
        """At most the earliest deadline (None only when no timer is pending): a timer armed at it fires no later
        than the first one is due, and finds it due or finds nothing (then asks :meth:`next_deadline`)."""
        return self._earliest if self._known else self.next_deadline()

    def pop_due(self, now: int) -> list[Due[K, P]]:
        """Remove and return every timer with ``at <= now``, earliest first (ties: scheduling order)."""
        due: list[Due[K, P]] = []
        self._known = False
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
