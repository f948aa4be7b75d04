"""Phases: durations for the report, and the progress line on a terminal and in a log."""

from __future__ import annotations

import io
import threading

from rebalance_lab.replay.progress import Phases


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_phases_are_timed_in_order_and_a_repeated_phase_adds_up() -> None:
    clock = Clock()
    phases = Phases(clock=clock)
    for name, seconds in (("parse", 2.0), ("replay", 5.5), ("parse", 1.0)):
        with phases.phase(name):
            clock.now += seconds
    assert phases.durations() == {"parse": 3.0, "replay": 5.5}


def test_a_log_gets_one_line_per_phase_start_and_end() -> None:
    clock, out = Clock(), io.StringIO()
    phases = Phases(out, clock=clock)
    with phases.phase("parse"):
        clock.now += 1.25
    assert out.getvalue() == "parse ...\nparse done in 1.2 s\n"


def test_on_a_terminal_the_task_counts_rewrite_one_line() -> None:
    out, polled = Tty(), threading.Event()

    def counts(phase: str) -> tuple[int, int]:
        polled.set()
        return (3, 8) if phase == "parse" else (0, 0)

    with Phases(out, counts, interval=0.01) as phases, phases.phase("parse"):
        assert polled.wait(5)
        polled.clear()
        assert polled.wait(5)  # a second poll: the first one's line is written by now
    text = out.getvalue()
    assert "\r\x1b[2Kparse 3/8 tasks" in text
    assert text.rsplit("\r\x1b[2K", 1)[1].startswith("parse done in")
    assert text.count("\n") == 1  # only the finished phase ends its line


def test_without_a_stream_nothing_is_printed_and_no_thread_runs() -> None:
    def counts(phase: str) -> tuple[int, int]:
        raise AssertionError("not polled")

    with Phases(None, counts, interval=0.001) as phases, phases.phase("replay"):
        assert phases._thread is None
