"""Members as processes, and the checks the client tests share.

Every member is a separate process running ``tests/clients/member.py`` (one client library
each), so a member can be crashed for real with SIGKILL, a clean close (SIGTERM) goes
through the library's own close path (LeaveGroup for a dynamic member), and the three
libraries never share an interpreter or an event loop with the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.clients.target import GroupDescription, Target, wait_until

MEMBER_SCRIPT = Path(__file__).with_name("member.py")
CLIENTS = ("aiokafka", "kafka-python", "confluent-kafka")

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 400
GROUP_TIMEOUT = 45.0  # seconds to wait for a group to settle
QUIET_PERIOD = 1.0  # seconds a settled group must stay unchanged (> 2 heartbeat intervals)


@dataclass
class MemberSpec:
    client: str
    bootstrap: str
    group: str
    topic: str
    client_id: str
    instance_id: str | None = None
    session_timeout_ms: int = SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = 30_000
    strategies: list[str] = field(default_factory=lambda: ["range"])
    commit: bool = False
    max_poll_records: int = 50
    delay_ms: int = 0


class Member:
    """One member process and the events it has reported so far."""

    def __init__(self, spec: MemberSpec, log_dir: Path) -> None:
        self.spec = spec
        self.name = spec.client_id
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.stderr_path = log_dir / f"{spec.client_id}-{time.monotonic_ns()}.stderr"
        self._stderr = self.stderr_path.open("w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), json.dumps(spec.__dict__)],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env,
        )
        self._reader = threading.Thread(target=self._read, name=f"member-{self.name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            event["member"] = self.name
            with self._lock:
                self.events.append(event)

    # -- what the client reported ---------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def assignment(self) -> frozenset[int]:
        latest = [e for e in self.snapshot() if e["ev"] == "assignment"]
        return frozenset(latest[-1]["partitions"]) if latest else frozenset()

    def rebalance_callbacks(self) -> list[dict[str, Any]]:
        return [e for e in self.snapshot() if e["ev"] in ("assigned", "revoked", "lost")]

    def consumed(self) -> list[tuple[float, int, int]]:
        return [(e["t"], p, o) for e in self.snapshot() if e["ev"] == "records" for p, o in e["items"]]

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text()[-4000:]

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, timeout: float = 30.0) -> None:
        """A clean close: the library's own close path (LeaveGroup for a dynamic member)."""
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not close in {timeout}s: {self.stderr()}") from None
        self._reader.join(5)
        assert any(e["ev"] == "closed" for e in self.snapshot()), f"{self.name} did not close: {self.stderr()}"

    def kill(self) -> None:
        """A crash: SIGKILL, so the library sends nothing more (no LeaveGroup)."""
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(5)

    def dispose(self) -> None:
        self.kill()
        self._stderr.close()


class Members:
    """Starts members and makes sure none outlives the test."""

    def __init__(self, target: Target, log_dir: Path) -> None:
        self.target = target
        self.log_dir = log_dir
        self.started: list[Member] = []

    def start(self, client: str, group: str, topic: str, client_id: str, **options: Any) -> Member:
        spec = MemberSpec(client=client, bootstrap=self.target.bootstrap_servers, group=group, topic=topic,
                          client_id=client_id, **options)
        member = Member(spec, self.log_dir)
        self.started.append(member)
        return member

    def dispose(self) -> None:
        for member in self.started:
            member.dispose()

    def diagnostics(self) -> str:
        return "\n".join(f"--- {m.name} (exit {m.process.poll()})\n{m.stderr()}" for m in self.started)


# -- checks -------------------------------------------------------------------------------------------


def assert_disjoint_cover(assignments: dict[str, frozenset[int]], partitions: int) -> None:
    seen: dict[int, str] = {}
    for name, owned in assignments.items():
        for p in owned:
            assert p not in seen, f"partition {p} owned by both {seen[p]} and {name}: {assignments}"
            seen[p] = name
    assert set(seen) == set(range(partitions)), f"partitions not covered: {assignments}"


def _disjoint_cover(assignments: dict[str, frozenset[int]], partitions: int) -> bool:
    try:
        assert_disjoint_cover(assignments, partitions)
    except AssertionError:
        return False
    return True


def wait_for_settled_group(target: Target, group: str, topic: str, partitions: int, members: list[Member],
                           timeout: float = GROUP_TIMEOUT, quiet: float = QUIET_PERIOD) -> GroupDescription:
    """Wait until the coordinator (DescribeGroups) and the clients agree on a complete assignment.

    Settled: Stable, exactly ``members`` (by client id), disjoint assignments covering every
    partition, each client's own view equal to what the coordinator says it owns, and all of
    that (with the same generation and member ids) unchanged for ``quiet`` seconds. The quiet
    period matters: a kafka-python leader rejoins right after its first assignment when its
    metadata snapshot was empty, so a group can look Stable for a few milliseconds only.
    """
    names = {m.name for m in members}
    since: dict[tuple[object, ...], float] = {}

    def settled() -> GroupDescription | None:
        description = target.observer.describe(group, topic)
        if description.state != "Stable" or set(description.by_client()) != names:
            return None
        assignments = description.assignments()
        if not _disjoint_cover(assignments, partitions):
            return None
        if any(m.assignment() != assignments[m.name] for m in members):
            return None
        try:
            generation = target.observer.generation(group, description.members[0].member_id)
        except AssertionError:  # that member left between the two requests
            return None
        signature = (generation, tuple(sorted((m.member_id, tuple(sorted(m.partitions)))
                                              for m in description.members)))
        first_seen = since.setdefault(signature, time.monotonic())
        return description if time.monotonic() - first_seen >= quiet else None

    try:
        return wait_until(settled, timeout, f"group {group} to settle with {sorted(names)}", interval=0.2)
    except AssertionError as exc:
        last = target.observer.describe(group, topic)
        clients = {m.name: sorted(m.assignment()) for m in members}
        logs = "\n".join(f"{m.name}: {m.stderr()[-1500:]}" for m in members)
        raise AssertionError(f"{exc}\ncoordinator: {last}\nclients: {clients}\n{logs}") from None


def ownership_overlaps(members: list[Member]) -> list[str]:
    """Pairs of members that held the same partition at the same time, from their callbacks.

    A member owns a partition from its ``assigned`` callback until its ``revoked``/``lost``
    callback (or the end). The events carry CLOCK_MONOTONIC stamps shared by all processes.
    """
    intervals: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for member in members:
        since: dict[int, float] = {}
        for event in member.rebalance_callbacks():
            for p in event["partitions"]:
                if event["ev"] == "assigned":
                    since.setdefault(p, event["t"])
                elif p in since:
                    intervals[p].append((since.pop(p), event["t"], member.name))
        for p, start in since.items():
            intervals[p].append((start, float("inf"), member.name))
    problems = []
    for p, spans in intervals.items():
        spans.sort()
        for i, (s1, e1, n1) in enumerate(spans):
            for s2, e2, n2 in spans[i + 1:]:
                if n1 != n2 and s2 < e1:
                        problems.append(f"partition {p}: {n1} [{s1:.3f}, {e1:.3f}] and {n2} [{s2:.3f}, {e2:.3f}]")
    return problems
