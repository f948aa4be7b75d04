"""The shell's per-connection state (coordinator/connection.py): idle tracking and the collector hold."""

from __future__ import annotations

import asyncio
import gc

from rebalance_lab.coordinator.connection import CollectorHold, IdleConnections, Output


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_connection_is_idle_once_its_last_activity_is_older_than_the_limit() -> None:
    clock = _Clock()
    idle = IdleConnections(max_idle_ms=1_000, clock=clock)
    idle.touch(1)
    idle.touch(2)
    clock.now += 1.0
    assert idle.expired() == []  # exactly the limit is not yet over it
    idle.touch(2)  # activity again
    clock.now += 0.5
    assert idle.expired() == [1]
    clock.now += 1.0
    assert sorted(idle.expired()) == [1, 2]


def test_a_connection_with_a_request_in_flight_is_never_idle_until_it_is_answered() -> None:
    clock = _Clock()
    idle = IdleConnections(max_idle_ms=100, clock=clock)
    idle.touch(7)
    idle.begin(7)
    clock.now += 60
    assert idle.expired() == []
    idle.end(7)  # answering counts as activity
    clock.now += 0.05
    assert idle.expired() == []
    clock.now += 0.1
    assert idle.expired() == [7]
    idle.forget(7)
    assert idle.expired() == []


def test_the_idle_sweep_runs_at_a_quarter_of_the_limit_and_at_least_once_a_second() -> None:
    assert IdleConnections(600_000).sweep_interval_s() == 1.0
    assert IdleConnections(400).sweep_interval_s() == 0.1
    assert IdleConnections(0).sweep_interval_s() == 0.01


def test_the_collector_is_held_while_any_big_request_is_in_flight_and_resumed_after_the_last() -> None:
    hold = CollectorHold()
    assert gc.isenabled()
    with hold.held():
        assert not gc.isenabled()
        with hold.held():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the first big request is still in flight
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off() -> None:
    hold = CollectorHold()
    gc.disable()
    try:
        with hold.held():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_is_alive_when_the_last_hold_ends_is_moved_out_of_the_collectors_reach() -> None:
    hold = CollectorHold()
    before = gc.get_freeze_count()
    try:
        with hold.held():
            lasting = [[i] for i in range(1_000)]  # state a big request made (logs, ACLs)
        assert gc.isenabled() and gc.get_freeze_count() >= before + len(lasting)
    finally:
        gc.unfreeze()


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closing = False

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes) -> None:
        self.written.append(data)


class _Writer:
    def __init__(self) -> None:
        self.transport = _Transport()

    def get_extra_info(self, name: str) -> None:
        return None  # no socket: the burst sender never takes its answers


def test_an_answer_written_now_leaves_after_the_answers_held_before_it_and_not_on_a_closing_transport() -> None:
    writer, loop = _Writer(), asyncio.new_event_loop()
    out = Output(writer, loop)  # type: ignore[arg-type]  # a fake writer: its transport only
    loop.close()  # never run: write() schedules nothing
    out.write(b"parked")
    assert writer.transport.written == [b"parked"]  # nothing held: one write, at once
    out.hold(b"a")
    out.hold(b"b")
    out.write(b"c")
    assert writer.transport.written == [b"parked", b"abc"]  # in order, in one write
    writer.transport.closing = True
    out.write(b"late")
    assert writer.transport.written == [b"parked", b"abc"]
