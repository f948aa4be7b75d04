"""Phases of a replay run: their durations (for the report) and a progress line while Spark works.

:class:`Phases` times named phases. Given a stream, it also starts a daemon thread
that asks ``task_counts(phase)`` (in the Spark pipeline: the status tracker's
completed/total tasks of the phase's running stages) and prints ``parse 3/8 tasks``:
on a terminal one line rewritten every ``interval`` seconds, elsewhere (a log file,
CI) a line when a phase starts and ends and at most one every ``quiet_interval``
seconds between. No pyspark here: the counting function is handed in.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

TaskCounts = Callable[[str], tuple[int, int]]  # phase -> (completed tasks, total tasks) of its running stages


@dataclass
class Phase:
    name: str
    started: float
    seconds: float | None = None


@dataclass
class Phases:
    stream: TextIO | None = None
    task_counts: TaskCounts | None = None
    interval: float = 0.5
    quiet_interval: float = 10.0
    clock: Callable[[], float] = time.monotonic
    done: list[Phase] = field(default_factory=list)
    _current: Phase | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _last_line: float = 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        current = Phase(name, self.clock())
        with self._lock:
            self._current = current
        self._say(f"{name} ...", final=False, force=True)
        try:
            yield current
        finally:
            current.seconds = self.clock() - current.started
            with self._lock:
                self._current = None
                self.done.append(current)
            self._say(f"{name} done in {current.seconds:.1f} s", final=True, force=True)

    def durations(self) -> dict[str, float]:
        """Seconds per phase, in the order they ran (a repeated phase adds up)."""
        out: dict[str, float] = {}
        for phase in self.done:
            out[phase.name] = round(out.get(phase.name, 0.0) + (phase.seconds or 0.0), 3)
        return out

    # -- the progress line -----------------------------------------------------------------

    def __enter__(self) -> Phases:
        if self.stream is not None and self.task_counts is not None:
            self._thread = threading.Thread(target=self._run, name="replay-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _is_tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                current = self._current
            if current is None or self.task_counts is None:
                continue
            try:
                completed, total = self.task_counts(current.name)
            except Exception:  # the tracker can fail while the context stops; progress is best effort
                continue
            elapsed = self.clock() - current.started
            tasks = f" {completed}/{total} tasks" if total else ""
            self._say(f"{current.name}{tasks} ({elapsed:.0f} s)", final=False, force=False)

    def _say(self, text: str, *, final: bool, force: bool) -> None:
        if self.stream is None:
            return
        now = self.clock()
        with self._lock:
            if self._is_tty():
                # One line, rewritten in place; a finished phase keeps its own line.
                self.stream.write(f"\r\x1b[2K{text}" + ("\n" if final else ""))
            elif force or now - self._last_line >= self.quiet_interval:
                self.stream.write(text + "\n")
            else:
                return
            self._last_line = now
            self.stream.flush()
