"""CPython's cyclic garbage collector switched off for a batch job that builds millions of small objects.

The parse and the replay allocate dicts and lists by the million, nearly all acyclic and
freed by reference counting, so the cyclic collector only walks objects that are still
alive. Its default thresholds (a young collection every 700 net allocations) cost about half
of the parse and a third of the replay; with collections every 10,000 allocations, replay
tasks still spent 11% of their CPU in it (0.67 of 6.0 CPU-s per 100,000 events, mostly young
and middle collections re-walking each group's unpickled events). The parse and the model
create no reference cycles (``tests/unit/replay/test_gc_policy.py`` replays generated groups
of every kind with every what-if and finds no cyclic garbage), so nothing collectable piles up
while the collector is off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def batch_gc() -> Iterator[None]:
    """No cyclic collection for the duration; what was alive on entry or is alive on exit is then in the
    oldest generation, so no young collection walks it.

    Objects alive on entry (a task's inputs, parsed events) are frozen, moved to the
    permanent generation that collections skip, until the exit hands them back. The
    collector's previous state is restored on exit; blocks nest.
    """
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        # What the batch allocated and still holds would be young: the first collection after enabling would
        # walk all of it. Freezing and unfreezing moves it to the oldest generation instead (a list splice).
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()
