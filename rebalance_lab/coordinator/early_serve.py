"""A ``serve`` process's early phase (issue 22): listening and answering while asyncio is imported beside it.

The main thread binds the brokers' ports, makes the world and runs the early shell (early.py); a daemon thread
imports asyncio and the asyncio shell meanwhile, from the loop's first idle moment (_IDLE_S). Python runs one
thread at a time: the early loop waits in ``select`` (the GIL released) until a client sends something, and the
switch interval is lowered while the import runs so that a request waits at most about a millisecond for the
import thread to let go. The phase ends
at a turn boundary of the early loop once the import is done (then EmulatorServer.take_over), or at SIGINT or
SIGTERM (then serve stops, as it does later).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.early import EarlyShell
from rebalance_lab.coordinator.request_core import RequestCore

# Both the asyncio shell (server.py) and a handler the early shell runs (metadata) import this: imported here, so
# no module is imported by the two threads at once (importlib's deadlock detection could hand one of them a
# module half made; tests/unit/test_serve_imports.py checks the two sets are apart)
from rebalance_lab.security import additional  # noqa: F401

if TYPE_CHECKING:  # signal's functions, as typeshed types them (it has no stubs for _signal)
    import signal as _signal
else:  # the C module signal wraps: see EarlyServe.__init__
    import _signal

log = logging.getLogger("rebalance_lab.server")
_SWITCH_INTERVAL_S = 0.001  # while both threads run: how long a request may wait for the import thread
_YIELD_STEP_S = 0.0005
_YIELD_MAX_S = 0.02  # the longest the import thread waits before one module (a bound, not a schedule)
_STOP_JOIN_S = 10.0  # a stop in the early phase waits for the import (a dataclass it makes may be being cached)
# The import thread starts once the early loop has had nothing to do for _IDLE_S (a client's first requests then
# have the interpreter to themselves: run beside them, the thread took it every switch interval and a first
# JoinGroup's answer came ~40-100 ms later at load 2, though the main thread's CPU to it was the same), and at the
# latest _START_BY_S after listening (a client that never pauses does not hold the asyncio shell back for long).
# Gaps between one client's requests on a host are far below _IDLE_S; without a client the handoff comes _IDLE_S
# later.
_IDLE_S = 0.01
_START_BY_S = 0.1


class EarlyServe:
    """The early phase of one serve process: its core, its shell, and how the phase ended."""

    def __init__(self, config: EmulatorConfig) -> None:
        self.stop_requested = False
        # _signal, the C module signal wraps (its Signals/Handlers/Sigmasks enums made at import, ~3 million
        # instructions of serve's start, issue 22): the same handlers set; asyncio imports signal in the import thread
        for sig in (_signal.SIGINT, _signal.SIGTERM):  # before the listening line, which scripts wait for
            _signal.signal(sig, self._on_signal)  # the asyncio shell installs its own when it takes over
        self.core = RequestCore(config)
        self.shell = EarlyShell.listening(self.core)  # an address in use raises OSError, as the asyncio start did
        self.listening_at = time.perf_counter()
        self.import_s: float | None = None  # how long the import thread took (None: not done)
        self._done = False
        self._failure: BaseException | None = None

    def run(self, import_rest: Callable[[], None]) -> bool:
        """Serve until ``import_rest`` has run in its thread (True), or a stop signal came first (False)."""
        self._serve_alone()
        if self.stop_requested:
            return False
        interval = sys.getswitchinterval()
        sys.setswitchinterval(_SWITCH_INTERVAL_S)
        thread = threading.Thread(target=self._import, args=(import_rest,), name="rebalance-lab-import", daemon=True)
        thread.start()
        try:
            self.shell.run(lambda: self._done or self.stop_requested)
        finally:
            sys.setswitchinterval(interval)
        thread.join(None if not self.stop_requested else _STOP_JOIN_S)  # its imports finished: none half made
        if self.stop_requested:
            return False
        if self._failure is not None:
            raise self._failure
        return True

    def _serve_alone(self) -> None:
        """Serve without the import thread until the loop has been idle for _IDLE_S, _START_BY_S after listening at
        the latest, or a stop signal (its handler wakes the loop)."""
        start_by = self.listening_at + _START_BY_S
        idle_since = time.perf_counter()
        while not self.stop_requested:
            left = start_by - time.perf_counter()
            if left <= 0:
                return
            if self.shell.turn(min(_IDLE_S, left)):
                idle_since = time.perf_counter()
            elif time.perf_counter() - idle_since >= _IDLE_S:
                return

    def log_handed_over(self) -> None:
        """One INFO line once the asyncio shell has taken over (benchmarks/startup.py reads it)."""
        log.info("early shell: %d requests answered before asyncio was ready; handed over %.1f ms after listening "
                 "(asyncio and its shell imported in %.1f ms)", self.shell.answered,
                 (time.perf_counter() - self.listening_at) * 1000, (self.import_s or 0.0) * 1000)

    def close(self) -> None:
        self.shell.close()

    def _import(self, import_rest: Callable[[], None]) -> None:
        started = time.perf_counter()
        hook = _YieldToRequests(self.shell, threading.get_ident())
        sys.meta_path.insert(0, hook)
        try:
            import_rest()
        except BaseException as exc:  # raised again in the main thread: serve fails as it would have
            self._failure = exc
        finally:
            sys.meta_path.remove(hook)
        self.import_s = time.perf_counter() - started
        self._done = True
        self.shell.wake()

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        self.stop_requested = True
        shell = getattr(self, "shell", None)  # None while the world is made: the loop then does not start
        if shell is not None:
            shell.wake()


class _YieldToRequests:
    """A finder first on ``sys.meta_path`` while the import thread runs: before each module that thread imports, it
    waits while the early loop is serving (EarlyShell.busy), at most _YIELD_MAX_S, so a client's first requests
    mostly have the interpreter to themselves instead of sharing it switch interval by switch interval. It finds
    nothing itself (None: the next finder looks), and another thread's imports pass straight through."""

    def __init__(self, shell: EarlyShell, thread_id: int) -> None:
        self._shell = shell
        self._thread_id = thread_id

    def find_spec(self, _name: str, _path: object = None, _target: object = None) -> None:
        if threading.get_ident() != self._thread_id:
            return
        waited = 0.0
        while self._shell.busy and waited < _YIELD_MAX_S:
            time.sleep(_YIELD_STEP_S)  # the GIL released: the early loop runs
            waited += _YIELD_STEP_S
