"""The KIP-848 part of the evidence run (issue 20 item 1): a ``consumer``-protocol group on a real Kafka 4.4.0.

Real confluent-kafka consumers (``group.protocol=consumer``, the broker's ``uniform`` assignor) take a group
through joins, a leave and a static member's restart; after each step the clients' own view is written
down once it has settled (every partition of the topic owned by exactly one live member, unchanged for a
while): each member's partitions, keyed by its ``group.instance.id`` or member id. The broker's
server.log at the level its distribution ships (INFO: joins, leaves, epoch bumps; the assignments are
DEBUG lines in 4.x) and the ``__consumer_offsets`` dump are kept, and :func:`disagreements` checks that
the replay of each source alone and of both together shows every settled state, in order, as far as the
source can tell it (:mod:`rebalance_lab.replay.coverage`).

The broker is the one tests/broker/test_kip848_replay.py asks for (1 s heartbeats, 6 s sessions).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebalance_lab.replay import coverage
from tests.replay_evidence import scenario
from tests.replay_evidence.capture import _create_topic, broker_lines, dump_offsets
from tests.replay_evidence.compare import replay
from tests.support import kip848_capture
from tests.support.kafka_broker import KafkaBroker

PARTITIONS = scenario.TOPIC_PARTITIONS
SETTLED_FOR_S = 2.5  # a view unchanged this long (2.5 heartbeats) is the group's settled state
STEP_TIMEOUT_S = 30.0

State = dict[str, list[int]]  # instance id or member id -> partitions


class Member(kip848_capture.Member):
    """A confluent-kafka consumer polled by its own thread, which also reads its assignment after each poll."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None = None) -> None:
        self.instance = instance
        self.seen_member_id = ""
        self.partitions: list[int] = []
        super().__init__(bootstrap, instance, group=group, topic=topic)

    def _polled(self) -> None:
        self.seen_member_id = self.member_id()
        self.partitions = sorted(tp.partition for tp in self.consumer.assignment())

    def key(self) -> str:
        return self.instance or self.seen_member_id


@dataclass
class History:
    group: str
    states: list[tuple[str, State]] = field(default_factory=list)  # (step, the clients' settled view)
    server_log: Path | None = None
    dump: Path | None = None

    def write_states(self, path: Path) -> None:
        path.write_text(json.dumps({"group": self.group, "states": self.states}, indent=1))

    @classmethod
    def read(cls, folder: Path) -> History:
        """A capture kept as a sample: ``states.json``, ``server.log`` and ``offsets.dump.txt`` in ``folder``."""
        data = json.loads((folder / "states.json").read_text())
        return cls(data["group"], [(name, state) for name, state in data["states"]], folder / "server.log",
                   folder / "offsets.dump.txt")


def _view(members: Sequence[Member]) -> State | None:
    """The members' view when it is a whole assignment: every partition once, every member known."""
    if not all(m.seen_member_id for m in members):
        return None
    owned = sorted(p for m in members for p in m.partitions)
    if owned != list(range(PARTITIONS)):
        return None
    return {m.key(): m.partitions for m in members}


def _settle(members: Sequence[Member]) -> State:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        view = _view(members)
        if view != seen:
            seen, since = view, time.monotonic()
        elif view is not None and time.monotonic() - since >= SETTLED_FOR_S:
            return view
        time.sleep(0.1)
    views = [(m.key(), m.partitions) for m in members]
    raise AssertionError(f"the group did not settle within {STEP_TIMEOUT_S} s: {views}")


def run(broker: KafkaBroker, out: Path) -> History:
    """m1 joins, m2 joins, the static s3 joins, m2 leaves, s3 restarts; the settled view after each step."""
    suffix = uuid.uuid4().hex[:8]
    history = History(f"evidence-848-{suffix}")
    topic = f"evidence-848-{suffix}"
    _create_topic(broker.bootstrap, topic)
    # the broker is shared with tests/broker/test_kip848_replay.py, which turns this logger to DEBUG: the evidence is
    # the log at the level the distribution ships (INFO for the group coordinator, docker/kafka/log4j2.properties)
    kip848_capture.set_coordinator_log_level(broker.bootstrap, "INFO")
    members: dict[str, Member] = {}

    def step(name: str) -> None:
        history.states.append((name, _settle(list(members.values()))))

    try:
        for name, instance in (("m1", None), ("m2", None), ("s3", "inst-3")):
            members[name] = Member(broker.bootstrap, history.group, topic, instance)
            step(f"{name} joins")
        members.pop("m2").close()
        step("m2 leaves")
        members.pop("s3").close()
        members["s3"] = Member(broker.bootstrap, history.group, topic, "inst-3")
        step("s3 restarts")
    finally:
        for member in members.values():
            member.close()
    time.sleep(1.0)  # the last records and lines reach the log
    out.mkdir(parents=True, exist_ok=True)
    history.server_log, history.dump = out / "server.log", out / "offsets.dump.txt"
    history.server_log.write_text(broker_lines(broker.logs()))
    history.dump.write_text(dump_offsets(broker))
    history.write_states(out / "states.json")
    return history


def _members(row: dict[str, Any]) -> dict[str, list[int] | None]:
    return {(m.get("group_instance_id") or m["member_id"]): (
        sorted(tp["partition"] for tp in m["assignment"]) if m.get("assignment") is not None else None)
        for m in row.get("members") or []}


def disagreements(files: Sequence[Path], sources: Sequence[str], history: History) -> list[str]:
    """Each settled state the replay of ``files`` does not show, in order, in a generation (its members; and each
    member's partitions where the sources tell assignments)."""
    generations, _, _ = replay(files, history.group)
    assignments = next(c.level for c in coverage.coverage(sources) if c.field == "assignments") != coverage.UNKNOWN
    rows = [generations[n] for n in sorted(generations)]
    found, at = [], 0
    for name, state in history.states:
        want: dict[str, list[int] | None] = dict(state) if assignments else dict.fromkeys(state)
        match = next((i for i in range(at, len(rows)) if _members(rows[i]) == want), None)
        if match is None:
            shown = [(r["generation"], _members(r)) for r in rows[at:]]
            found.append(f"after {name!r}: no generation shows {want}; from generation {at} on: {shown}")
            continue
        at = match
    return found
