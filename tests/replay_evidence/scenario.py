"""The evidence scenario: real kafka-python consumers take a group on a real broker through 14 generations.

Each member is its own process (:mod:`tests.replay_evidence.member`) and writes down what it saw
after every assignment: that record is the truth the replay of the broker's evidence is checked
against (:class:`Truth`). The history, on a topic of 6 partitions:

====  =====================================================  ==================================
gen   step                                                   why it matters
====  =====================================================  ==================================
1-3   a, b (range) and the static member s (range) join      joins, a static member
4     b closes (LeaveGroup)                                  a leave
5-6   k joins from a process that is then SIGKILLed          a session expiry
--    s restarts twice under the same group.instance.id      static rejoins without a rebalance
7     c joins preferring roundrobin, range                   the protocol stays range (a vote)
8     a closes                                               s votes range, c roundrobin: a tie
9     s stops (a static member sends no LeaveGroup)          its session expires; c alone
10    d joins preferring roundrobin, range                   roundrobin
11    e joins preferring range, roundrobin                   2 votes to 1
12    c closes                                               d and e: a tie again
13-14 d, then e close                                        the group ends empty
====  =====================================================  ==================================

Every step waits until the live members agree on a new generation (or, for a static restart,
until the new process has its assignment in the same generation).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MEMBER_SCRIPT = Path(__file__).resolve().parent / "member.py"
TOPIC_PARTITIONS = 6
STEP_TIMEOUT_S = 60.0


class ScenarioError(AssertionError):
    """A step did not settle: the members' own records say what they saw."""


class Process:
    """One member process and its JSON lines."""

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name
        self.instance_id = spec.get("instance_id")
        self.popen = subprocess.Popen([sys.executable, str(MEMBER_SCRIPT), json.dumps(spec)],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.records: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            if line.startswith("{"):
                record = json.loads(line)
                record["name"], record["instance_id"] = self.name, self.instance_id
                self.records.append(record)

    def last(self) -> dict[str, Any] | None:
        assigned = [r for r in self.records if r["ev"] == "assigned"]
        return assigned[-1] if assigned else None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self._reader.join(timeout=5)


@dataclass
class Truth:
    """What the clients saw, per generation: member id -> (name, instance id, partitions), the leader, the protocol."""

    generations: dict[int, dict[str, Any]] = field(default_factory=dict)
    static_rejoins: int = 0
    steps: list[tuple[str, float, str | None]] = field(default_factory=list)  # (step, time, the rebalance reason)
    records: list[dict[str, Any]] = field(default_factory=list)  # every member's reports, in time order

    def members(self, generation: int) -> dict[str, list[int]]:
        return {m: row["partitions"] for m, row in self.generations.get(generation, {}).get("members", {}).items()}


@dataclass
class Scenario:
    bootstrap: str
    group: str
    topic: str
    processes: dict[str, Process] = field(default_factory=dict)
    retired: list[Process] = field(default_factory=list)
    truth: Truth = field(default_factory=Truth)
    generation: int = 0

    def start(self, name: str, strategies: list[str], instance_id: str | None = None) -> Process:
        spec = {"bootstrap": self.bootstrap, "group": self.group, "topic": self.topic, "client_id": name,
                "instance_id": instance_id, "strategies": strategies}
        process = self.processes[name] = Process(name, spec)
        return process

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name)
        process.stop(sig)
        self.retired.append(process)

    def step(self, name: str, action: Callable[[], object], *, new_generation: bool = True,
             fresh: Process | None = None, trigger: str | None = None) -> None:
        """Act, and wait until the members agree on the outcome; ``trigger`` is the reason code the broker gives
        for the rebalance the step starts (the replay's ``trigger_codes``)."""
        self.truth.steps.append((name, time.time(), trigger))
        action()
        self._settle(name, new_generation, fresh)

    def _settle(self, name: str, new_generation: bool, fresh: Process | None) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while time.monotonic() < deadline:
            lasts = [p.last() for p in self.processes.values()]
            if fresh is not None and fresh.last() is None:
                lasts = [None]
            generations = {r["generation"] for r in lasts if r is not None}
            covered = sorted(q for r in lasts if r is not None for q in r["partitions"])
            if (None not in lasts and len(generations) == 1 and covered == list(range(TOPIC_PARTITIONS))
                    and (generations.pop() > self.generation) == new_generation) or (
                    not self.processes and new_generation):
                if self.processes:
                    self.generation = next(iter({r["generation"] for r in lasts if r is not None}))
                return
            time.sleep(0.1)
        raise ScenarioError(f"step {name!r} did not settle: {self.records()[-12:]}")

    def records(self) -> list[dict[str, Any]]:
        every = [r for p in [*self.retired, *self.processes.values()] for r in p.records
                 if r["ev"] in ("assigned", "led")]
        return sorted(every, key=lambda r: r["t"])

    def close(self) -> None:
        for name in list(self.processes):
            self.stop(name, signal.SIGKILL)

    def build_truth(self) -> Truth:
        """Per generation: its members and their partitions, the leader and the protocol, from the leader's own
        record of the assignment it made (a leader that rejoins at once completes no generation it led), else
        from the members' completed rounds. A static member's new process given the old member's assignment in
        a generation already completed is a rejoin without a rebalance: counted, not a member of that
        generation (the coordinator's record of it still names the old member id until the next rebalance)."""
        self.truth.records = self.records()
        for record in self.truth.records:
            if record["ev"] == "led":
                self.truth.generations[record["generation"]] = {
                    "members": {m: {"name": None, **v} for m, v in record["members"].items()},
                    "leader": record["member_id"], "protocol": record["protocol"]}
        led = set(self.truth.generations)
        for record in self.truth.records:
            if record["ev"] != "assigned":
                continue
            row = self.truth.generations.setdefault(record["generation"], {"members": {}, "leader": None,
                                                                            "protocol": record["protocol"]})
            members = row["members"]
            if record["member_id"] in members:
                members[record["member_id"]]["name"] = record["name"]
                continue
            if record["instance_id"] and any(m["instance_id"] == record["instance_id"] for m in members.values()):
                self.truth.static_rejoins += 1
                continue
            if record["generation"] in led:
                raise ScenarioError(f"{record} completed a generation its leader did not assign to it")
            members[record["member_id"]] = {"name": record["name"], "instance_id": record["instance_id"],
                                            "partitions": record["partitions"]}
            if record["leader"]:
                row["leader"] = record["member_id"]
        return self.truth


def run(bootstrap: str, group: str, topic: str) -> Truth:
    """Drive the history of the module docstring; the clients' record."""
    s = Scenario(bootstrap, group, topic)
    try:
        s.step("a joins", lambda: s.start("a", ["range"]), trigger="member_join")
        s.step("b joins", lambda: s.start("b", ["range"]), trigger="member_join")
        s.step("s joins (static)", lambda: s.start("s", ["range"], "s-1"), trigger="member_join")
        s.step("b leaves", lambda: s.stop("b"), trigger="member_leave")
        s.step("k joins", lambda: s.start("k", ["range"]), trigger="member_join")
        s.step("k is killed", lambda: s.stop("k", signal.SIGKILL), trigger="session_timeout")
        for restart in ("first", "second"):
            s.stop("s", signal.SIGKILL)
            fresh = s.start("s", ["range"], "s-1")
            s.step(f"s restarts ({restart})", lambda: None, new_generation=False, fresh=fresh)
        s.step("c joins (roundrobin, range)", lambda: s.start("c", ["roundrobin", "range"]), trigger="member_join")
        s.step("a leaves", lambda: s.stop("a"), trigger="member_leave")
        s.step("s stops (static: no LeaveGroup)", lambda: s.stop("s"), trigger="session_timeout")
        s.step("d joins (roundrobin, range)", lambda: s.start("d", ["roundrobin", "range"]), trigger="member_join")
        s.step("e joins (range, roundrobin)", lambda: s.start("e", ["range", "roundrobin"]), trigger="member_join")
        s.step("c leaves", lambda: s.stop("c"), trigger="member_leave")
        s.step("d leaves", lambda: s.stop("d"), trigger="member_leave")
        s.step("e leaves", lambda: s.stop("e"), trigger="member_leave")
    finally:
        s.close()
    return s.build_truth()
