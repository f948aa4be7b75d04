"""Work over a request's entries in steps, so one big request never holds the loop (issue 17, "Fairness").

A handler writes its loop over entries as a generator that calls :func:`pause` (``yield from``) between
entries; :func:`answer` runs a small request at once (the handler's reply is then the response body, as
before) and hands a big one to the server as a :class:`Stepped` reply, run a few milliseconds at a time.
Kafka's request handler threads serve other requests while one thread works through a big request; the
emulator's equivalent is to let the loop serve other connections between two steps. Every state change
still happens on the loop, in the request's order, and each entry is answered from one state.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Generator, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from rebalance_lab.coordinator.handlers.base import Stepped

K = TypeVar("K")
T = TypeVar("T")


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


S = TypeVar("S", bound=_Ordered)
STEP = 200  # entries (partitions, names) per step: ~1-5 ms of handler work


class Pacer:
    """Counts work done and yields once a step's worth is done."""

    def __init__(self, step: int = STEP) -> None:
        self._step, self._done = step, 0

    def pause(self, weight: int = 1) -> Generator[None, None, None]:
        self._done += weight
        if self._done >= self._step:
            self._done = 0
            yield


def answer(steps: Generator[None, None, Any], size: int) -> Any:
    """The response body at once for a request of at most one step's ``size``, else a :class:`Stepped` reply."""
    stepped = Stepped(steps)
    return stepped.run() if size <= STEP else stepped


def counted(keys: Iterable[K]) -> Generator[None, None, Counter[K]]:
    """``Counter(keys)``, in steps (counting 200,000 names takes ~100 ms)."""
    counts: Counter[K] = Counter()
    pacer = Pacer(STEP * 10)
    for key in keys:
        yield from pacer.pause()
        counts[key] += 1
    return counts


def chunks(items: Sequence[T], size: int = STEP) -> Generator[Sequence[T], None, None]:
    """``items`` a step's worth at a time (for a check that takes a list, e.g. controller_limits)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def distinct_sorted(items: Iterable[S]) -> Generator[None, None, list[S]]:
    """``sorted(set(items))``, in steps: runs of a few thousand sorted apart, then merged a step at a time."""
    pacer, seen = Pacer(STEP * 10), set()
    for item in items:
        yield from pacer.pause()
        seen.add(item)
    runs: list[list[S]] = []
    for chunk in chunks(list(seen), STEP * 25):
        yield
        runs.append(sorted(chunk))
    if len(runs) <= 1:
        return runs[0] if runs else []
    merged: list[S] = []
    for item in heapq.merge(*runs):
        yield from pacer.pause()
        merged.append(item)
    return merged


def released(*collections: list[Any] | dict[Any, Any]) -> Generator[None, None, None]:
    """Empty a handler's big working lists and dicts a few thousand entries at a time, before it returns.

    A generator's locals are freed at once when it finishes: 200,000 parsed resources, their answers and
    their counts (~1 million objects) held the loop 0.1-0.25 s in the step that returned (AlterConfigs).
    """
    size = STEP * 25
    for items in collections:
        while len(items) > size:
            yield
            if isinstance(items, list):
                del items[-size:]
            else:
                for _ in range(size):
                    items.popitem()
