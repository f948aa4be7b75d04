"""Work over a request's entries in steps, so one big request never holds the loop (issue 17, "Fairness").

A handler writes its loop over entries as a generator that calls :func:`pause` (``yield from``) between
entries; :func:`answer` runs a small request at once (the handler's reply is then the response body, as
before) and hands a big one to the server as a :class:`Stepped` reply, run a few milliseconds at a time.
Kafka's request handler threads serve other requests while one thread works through a big request; the
emulator's equivalent is to let the loop serve other connections between two steps. Every state change
still happens on the loop, in the request's order, and each entry is answered from one state.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.handlers.base import Stepped

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
