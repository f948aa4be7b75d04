"""What the two client matrices share: building a driver, the records its members consume, and the scenario.

``test_client_matrix`` (classic groups, on the emulator) and ``test_kip848_matrix`` (consumer-protocol
groups, on the emulator and a real Kafka 4.4.0 broker) run the same story with the same drivers: three
members join and consume everything, one leaves cleanly, one is SIGKILLed and fenced when its session
expires, and the last one ends up owning every partition. Each matrix's ``Run`` subclasses
:class:`DriverRun` and says how its members start and how it sees the group settle.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.matrix.harness import BuildFailed, Member, ToolchainMissing, wait_until
from tests.support.kafka_broker import is_ci

PARTITIONS = 6
BATCH = 60  # records per produce step: 10 per partition
JOIN_TIMEOUT_S = 90.0  # three JVMs starting on two shared cores
STEP_TIMEOUT_S = 45.0


def build_driver(client_name: str, build: Callable[[], list[str]]) -> tuple[list[str], float]:
    """The driver's command and the seconds its build took; a missing toolchain skips (fails in CI)."""
    started = time.monotonic()
    try:
        command = build()
    except ToolchainMissing as exc:
        if is_ci():
            pytest.fail(f"{client_name}: toolchain missing in CI: {exc}", pytrace=False)
        pytest.skip(f"{client_name}: {exc}")
    except BuildFailed as exc:
        pytest.fail(f"{client_name}: driver build failed: {exc}", pytrace=False)
    return command, time.monotonic() - started


class DriverRun:
    """One client's run: what was produced and consumed, and its driver processes.

    The subclasses are dataclasses declaring these fields; the driver reader threads call
    :meth:`on_records`, hence the lock.
    """

    topic: str
    producer: Any  # a kafka-python KafkaProducer
    produced: set[tuple[int, int]]
    consumed: Counter[tuple[int, int]]
    members: dict[str, Member]
    timings: dict[str, float]
    _lock: threading.Lock

    # -- what a matrix says ------------------------------------------------------------------------

    def start(self, name: str, command: list[str]) -> None:
        raise NotImplementedError

    def wait_for_members(self, count: int, timeout: float) -> float:
        """A settled group of ``count`` members whose live drivers' assignments partition the topic."""
        raise NotImplementedError

    def group_summary(self) -> str:
        """The group as the target last described it (for failure messages)."""
        raise NotImplementedError

    # -- records -----------------------------------------------------------------------------------

    def on_records(self, records: list[tuple[int, int]]) -> None:
        with self._lock:
            self.consumed.update(records)

    def consumed_set(self) -> set[tuple[int, int]]:
        with self._lock:
            return set(self.consumed)

    def produce(self) -> None:
        futures = [self.producer.send(self.topic, value=f"r{i}".encode(), partition=i % PARTITIONS)
                   for i in range(BATCH)]
        self.producer.flush(30)
        for future in futures:
            meta = future.get(30)
            self.produced.add((meta.partition, meta.offset))

    def wait_all_consumed(self, timeout: float = STEP_TIMEOUT_S) -> float:
        def missing() -> set[tuple[int, int]]:
            return self.produced - self.consumed_set()

        return wait_until(lambda: not missing(), timeout,
                          lambda: f"{len(missing())} of {len(self.produced)} records never consumed, e.g. "
                          f"{sorted(missing())[:10]}")

    # -- members -----------------------------------------------------------------------------------

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.process.poll() is None]

    def assert_live(self, count: int) -> None:
        exited = {m.name: m.process.poll() for m in self.members.values() if m.process.poll() is not None}
        assert len(self.live()) >= count, f"a driver exited early: exit codes {exited}"

    def wait_assignments_cover_topic(self, timeout: float) -> None:
        wait_until(self._assignments_cover_topic, timeout, self._describe_assignments)

    def _assignments_cover_topic(self) -> bool:
        owned = [m.owned_now() for m in self.live()]
        return sum(len(o) for o in owned) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS))

    def _describe_assignments(self) -> str:
        return (f"live members' partitions do not cover 0..{PARTITIONS - 1} exactly once: "
                f"{ {m.name: sorted(m.owned_now()) for m in self.live()} }; group: {self.group_summary()}")

    def check_errors(self) -> None:
        errors = {m.name: m.errors() for m in self.members.values() if m.errors()}
        assert not errors, f"drivers reported errors: {errors}"

    def member_diagnostics(self) -> list[str]:
        """Each member's events and stderr, after asking the Python drivers for their stacks."""
        for member in self.members.values():
            member.dump_stacks()
        time.sleep(0.5)  # the stacks reach stderr asynchronously (a real process, not a unit test)
        return [m.diagnostics() for m in self.members.values()]


def leave_crash_and_take_over(run: DriverRun, command: list[str], session_s: float) -> None:
    """Three members consume everything; ``a`` leaves, ``b`` is killed (fenced after ``session_s``), and ``c``
    ends up owning every partition and consuming every record, then closes cleanly."""
    run.produce()
    started = time.monotonic()
    for name in "abc":
        run.start(name, command)
    run.wait_for_members(3, JOIN_TIMEOUT_S)
    run.wait_all_consumed()
    run.timings["join"] = time.monotonic() - started

    a, b, c = (run.members[n] for n in "abc")
    started = time.monotonic()
    assert a.close(STEP_TIMEOUT_S) == 0, "member a did not exit cleanly"
    assert a.has_event("closed"), "member a did not report closing"
    run.wait_for_members(2, STEP_TIMEOUT_S)
    run.timings["leave"] = time.monotonic() - started
    run.produce()
    run.wait_all_consumed()

    started = time.monotonic()
    b.crash()
    run.produce()
    run.wait_for_members(1, session_s + STEP_TIMEOUT_S)
    run.timings["crash"] = time.monotonic() - started
    assert c.owned_now() == set(range(PARTITIONS))
    run.wait_all_consumed()

    assert c.close(STEP_TIMEOUT_S) == 0, "member c did not exit cleanly"
    assert c.has_event("closed"), "member c did not report closing"
    run.check_errors()
