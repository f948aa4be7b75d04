"""No cyclic collections while a big classic rebalance holds its members' requests (issue 22).

In a full rebalance of N members every JoinGroup, then every SyncGroup, is parked until the last member's arrives:
each parked request's objects (its decoded body, its input, its reply slot, the connection's held state) live for
the whole phase, so CPython's young collections traverse each of them in generation 0, again in generation 1,
and a full collection then traverses what has grown since the last freeze (``FreezeOnGrowth`` in connection.py).
Measured in a serve process at 10,000 members (gc.callbacks): ~260 young and one full collection in the timed
rebalance, ~0.18 s of its ~2.3 s of server CPU; in-process (benchmarks/classic_core.py) 0.49 s of 1.7 s. None of
them finds garbage: a rebalance's objects form no cycles (``Parked.resolve`` drops the shell's callback, which
held the reply) and are freed by reference counting when answered.

So while at least :data:`HOLD_AT` replies are parked the collector is off; it is on again when they fall below
:data:`RELEASE_BELOW` (the phase completed: the join's answers, then the sync's, all go out at once), or once
:data:`MAX_HELD_OBJECTS` more tracked objects are alive than at the hold (a stalled rebalance that keeps the
requests parked up to its rebalance timeout while other requests make garbage: the collector then runs again and
no hold starts until the parked replies have fallen below :data:`RELEASE_BELOW`). Nothing is frozen: what the
hold leaves alive is traversed once by the next young collection. A collector turned off by the embedding
program stays off (the hold only re-enables what it disabled), as ``CollectorHold`` does.
"""

from __future__ import annotations

import gc

HOLD_AT = 256  # parked replies that start a hold: a group of this size parks them in every rebalance
RELEASE_BELOW = 64  # parked replies below which the hold ends (orphaned parked requests never resolve: not 0)
MAX_HELD_OBJECTS = 2_000_000  # net tracked allocations during one hold (~100-200 MB) that end it anyway


class CollectorPause:
    """The hold, driven by the number of parked replies (``GroupService`` calls :meth:`parked` as it changes)."""

    __slots__ = ("_held", "_resume", "_spent", "_start", "holds")

    def __init__(self) -> None:
        self._held = False
        self._resume = False  # whether the collector was on when the hold began (the hold re-enables only that)
        self._start = 0  # generation 0's count at the hold: it counts tracked allocations net of frees
        self._spent = False  # ended by MAX_HELD_OBJECTS: no new hold until the parked replies fall
        self.holds = 0  # holds begun (tests and benchmarks read it)

    @property
    def held(self) -> bool:
        return self._held

    def parked(self, count: int) -> None:
        """``count`` replies are parked now."""
        if self._held:
            if count < RELEASE_BELOW:
                self._release()
            elif gc.get_count()[0] - self._start > MAX_HELD_OBJECTS:
                self._release()
                self._spent = True
        elif count >= HOLD_AT:
            if not self._spent:
                self._hold()
        elif count < RELEASE_BELOW:
            self._spent = False

    def _hold(self) -> None:
        self._held = True
        self.holds += 1
        self._resume = gc.isenabled()
        gc.disable()
        self._start = gc.get_count()[0]

    def _release(self) -> None:
        self._held = False
        if self._resume:
            gc.enable()

    def close(self) -> None:
        """End a hold now (the server stops while requests are parked)."""
        if self._held:
            self._release()


_SERVE_PROCESS = False  # set by serve's own process (cli.main), never by a program embedding the emulator


def serve_process() -> None:
    """Say that this process is serve's own: its group services pause the collector (:func:`for_process`)."""
    global _SERVE_PROCESS
    _SERVE_PROCESS = True


def for_process() -> CollectorPause | None:
    """A pause for serve's own process, else None: the process ends with its server, so a hold cannot outlive
    it, while a program embedding the emulator (a test run) may stop a server with replies still parked and
    would keep a collector off that no later request turns on again."""
    return CollectorPause() if _SERVE_PROCESS else None
