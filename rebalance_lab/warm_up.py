"""What a ``serve`` process makes right after its brokers listen, one small step per event-loop turn (issue 22).

A fresh ``serve`` imports each API's handler, and what that handler uses, on the API's first request, and the
codec makes each API version's reader and writer on first use: a client's first minute (Metadata, CreateTopics,
FindCoordinator, the classic group's JoinGroup, SyncGroup, Heartbeat and LeaveGroup, the offsets, ListOffsets,
Produce, Fetch) would wait for all of that. Once the listening line is printed the process is idle until the
client's first request, and usually idle between its requests (the client's own Python runs on another core),
so the process makes them then: one module import, or one API's message classes, per step.

Each step is a loop callback re-armed with ``call_later(0)``: the loop runs it after the I/O callbacks of its
turn, so a request that has arrived is read, and its connection's task woken, before the next step; a request
waits for the one step in progress at most (the longest is a few milliseconds: ``benchmarks/startup.py`` prints
it). Nothing here changes how any request is answered, only when the modules it needs are loaded; a step that
fails is logged and skipped (the request that needs the module meets the same error, as it would have).
``serve --no-warm-up`` leaves everything to first use. The KIP-848 coordinator, transactions' admin APIs,
security, storage and the other APIs stay on first use: most clients never ask for them.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator

from rebalance_lab.coordinator.handlers import HANDLERS
from rebalance_lab.protocol import codec

log = logging.getLogger(__name__)

# (handler module, the modules it imports that serve's start has not, dependencies first), in the order a
# client's first minute asks for them; a module imported here whose own imports changed only makes its step longer
# (tests/unit/test_serve_imports.py bounds how many modules one step may import)
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("metadata", ("rebalance_lab.coordinator.handlers.authz",)),
    ("create_topics", ("rebalance_lab.coordinator.controller_limits", "rebalance_lab.coordinator.handlers.steps")),
    ("find_coordinator", ()),
    ("join_group", ()),
    ("sync_group", ()),
    ("offset_fetch", ("rebalance_lab.coordinator.consumer_surface",)),
    ("list_offsets", ("rebalance_lab.coordinator.fetch_sessions", "zlib", "_compression", "gzip",
                      "rebalance_lab.coordinator.record_batch", "rebalance_lab.coordinator.producer_state",
                      "rebalance_lab.coordinator.logs", "rebalance_lab.coordinator.dataplane")),
    ("produce", ("rebalance_lab.coordinator.record_validation", "rebalance_lab.coordinator.handlers.leaders",
                 "rebalance_lab.coordinator.transactions", "rebalance_lab.coordinator.transactions.batches",
                 "rebalance_lab.coordinator.transactions.state", "rebalance_lab.coordinator.transactions.coordinator",
                 "rebalance_lab.coordinator.transactions.records", "rebalance_lab.coordinator.transactions.service")),
    ("fetch", ()),
    ("offset_commit", ()),
    ("heartbeat", ()),
    ("leave_group", ()),
    ("init_producer_id", ()),
    ("describe_groups", ()),
    ("list_groups", ()),
)
HANDLER_PACKAGE = "rebalance_lab.coordinator.handlers"


class Step:
    """One step: its name (for the log) and what it does."""

    __slots__ = ("name", "run")

    def __init__(self, name: str, run: Callable[[], object]) -> None:
        self.name = name
        self.run = run


def module_names(plan: Iterable[tuple[str, tuple[str, ...]]] = PLAN) -> Iterator[str]:
    """Every module the plan imports, in its order."""
    for handler, modules in plan:
        yield from modules
        yield f"{HANDLER_PACKAGE}.{handler}"


def steps(plan: Iterable[tuple[str, tuple[str, ...]]] = PLAN) -> Iterator[Step]:
    """Per handler, its modules (one import a step) and its API's message classes. Not each version's codec plans:
    all versions of these APIs are ~35 ms of CPU for ~0.3 ms per API a client's first request of it would spend,
    and on a busy machine the process's CPU is what its requests wait for."""
    for handler, modules in plan:
        for module in (*modules, f"{HANDLER_PACKAGE}.{handler}"):
            yield Step(module, functools.partial(importlib.import_module, module))
        yield Step(f"{handler} classes", functools.partial(_classes, HANDLERS[handler]))


def _classes(api_key: int) -> None:
    codec.request_type(api_key)
    codec.response_type(api_key)


class WarmUp:
    """Runs :func:`steps` one per loop turn; ``done`` is set when the last has run (or :meth:`cancel` stopped it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, work: Iterable[Step] | None = None) -> None:
        self._loop = loop
        self._steps = iter(steps() if work is None else work)
        self._handle: asyncio.TimerHandle | None = None
        self.done = asyncio.Event()
        self.count = 0
        self.busy_s = 0.0
        self.longest: tuple[float, str] = (0.0, "")
        self._began = 0.0

    def start(self) -> WarmUp:
        self._began = time.perf_counter()
        self._arm()
        return self

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.done.set()

    def _arm(self) -> None:
        # call_later(0), not call_soon: a due timer joins the loop's ready queue after the I/O callbacks of the same
        # turn, so the tasks those callbacks wake run before the next step (call_soon would put one step first)
        self._handle = self._loop.call_later(0, self._next)

    def _next(self) -> None:
        step = next(self._steps, None)
        if step is None:
            self._finish()
            return
        began = time.perf_counter()
        try:
            step.run()
        except Exception as exc:  # the request that needs it meets the same error, as it would have
            log.warning("warm-up: %s failed (%s: %s); left to its first request", step.name, type(exc).__name__, exc)
        took = time.perf_counter() - began
        self.count += 1
        self.busy_s += took
        self.longest = max(self.longest, (took, step.name))
        self._arm()

    def _finish(self) -> None:
        self._handle = None
        self.done.set()
        log.info("warm-up done: %d steps, %.1f ms busy over %.1f ms; longest step %.1f ms (%s)", self.count,
                 self.busy_s * 1000, (time.perf_counter() - self._began) * 1000, self.longest[0] * 1000,
                 self.longest[1])
