"""No cyclic collections while a big classic group rebalances (issue 22).

In a full rebalance of N members every JoinGroup, then every SyncGroup, is parked or answered in a burst: each
parked request's objects (its decoded body, its input, its reply slot, the connection's held state) live for the
whole phase, so CPython's young collections traverse each of them in generation 0, again in generation 1, and a
full collection then traverses what has grown since the last freeze (``FreezeOnGrowth`` in connection.py).
Measured in a serve process at 10,000 members (gc.callbacks): ~260 young and one full collection in the timed
rebalance, ~0.18 s of its ~2.3 s of server CPU; with the collector off in the whole process the rebalance took
0.3-0.6 s less of ~1.9 s. None of them finds garbage: a rebalance's objects form no cycles (``Parked.resolve``
drops the shell's callback, which held the reply) and are freed by reference counting when answered.

So the collector is off from the moment a group of :data:`HOLD_AT` members or more begins a rebalance (or that
many replies are parked: many groups' joins) until that group's rebalance is over: its state is neither
PreparingRebalance nor CompletingRebalance and every member of its generation has sent its SyncGroup
(``rebalancing``: the classic coordinator's pending-sync set, KAFKA-12890), or the group is gone; and fewer than
:data:`RELEASE_BELOW` replies are parked. The followers' SyncGroups that come after the leader's are answered at
arrival, never parked: a hold by parked replies alone ended with the join phase and left the sync phase to the
collector. And a hold begun only at 256 parked JoinGroups left the rebalance's first requests to a collection of
generation 1 that traversed what the previous rebalance left alive (41 ms of a 10,000-member rebalance,
gc.callbacks in serve).

A hold always ends: besides that rule, after :data:`MAX_HOLD_MS` of the world's clock, or once
:data:`MAX_HELD_OBJECTS` more tracked objects are alive than at the hold (a rebalance that stalls, or that other
clients keep busy, while other requests make garbage: memory stays bounded). Either bound marks the hold spent:
no new hold until the parked replies have fallen below :data:`RELEASE_BELOW`. Nothing is frozen: what the hold
leaves alive is traversed once by the next young collection (the first allocation after it: generation 0's
count is past its threshold). A collector turned off by the embedding program stays off (the hold only
re-enables what it disabled), as ``CollectorHold`` does.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

HOLD_AT = 256  # parked replies that start a hold: a group of this size parks them in every rebalance
RELEASE_BELOW = 64  # parked replies below which a hold may end (orphaned parked requests never resolve: not 0)
MAX_HELD_OBJECTS = 2_000_000  # net tracked allocations during one hold (~100-200 MB) that end it anyway
# A hold's longest time: a 10,000-member rebalance takes 1-4 s on a loaded 2-core machine, 50,000 about 5x that.
MAX_HOLD_MS = 30_000

# The group of that id's members while it rebalances, else 0 (GroupService gives the classic coordinator's)
Rebalancing = Callable[[str], int]


class CollectorPause:
    """The hold, driven by the number of parked replies and the held group's rebalance (``GroupService`` calls
    :meth:`parked` after each request that parks or resolves replies, and after every request or timer while
    held)."""

    __slots__ = ("_group", "_held", "_resume", "_since", "_spent", "_start", "holds")

    def __init__(self) -> None:
        self._held = False
        self._group = ""  # the group whose request started the hold
        self._resume = False  # whether the collector was on when the hold began (the hold re-enables only that)
        self._start = 0  # generation 0's count at the hold: it counts tracked allocations net of frees
        self._since = 0  # the world's time at the hold, ms
        self._spent = False  # ended by a bound: no new hold until the parked replies fall
        self.holds = 0  # holds begun (tests and benchmarks read it)

    @property
    def held(self) -> bool:
        return self._held

    def parked(self, count: int, now_ms: int, group_id: str | None, rebalancing: Rebalancing) -> None:
        """``count`` replies are parked now, at ``now_ms``, after a request of ``group_id`` (None: a timer, or a
        request of no one group); ``rebalancing`` is asked about the held group only when a hold may end."""
        if self._held:
            if gc.get_count()[0] - self._start > MAX_HELD_OBJECTS or now_ms - self._since > MAX_HOLD_MS:
                self._release()
                self._spent = True
            elif count < RELEASE_BELOW and not rebalancing(self._group):
                self._release()
        elif count >= HOLD_AT:
            if not self._spent:
                self._hold(group_id or "", now_ms)
        elif count < RELEASE_BELOW:
            self._spent = False

    def began(self, group_id: str, now_ms: int, rebalancing: Rebalancing) -> None:
        """A rebalance of ``group_id`` began (its PreparingRebalance): a hold begins now if it has :data:`HOLD_AT`
        members or more, before its members' JoinGroups park."""
        if not self._held and not self._spent and rebalancing(group_id) >= HOLD_AT:
            self._hold(group_id, now_ms)

    def _hold(self, group_id: str, now_ms: int) -> None:
        self._held = True
        self.holds += 1
        self._group = group_id
        self._since = now_ms
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
