"""One client's KIP-848 matrix run on one target: its members, what they consumed, what they sent.

Unlike the classic matrix (``test_client_matrix.Run``), everything here goes through the Kafka
protocol, so the same code watches the emulator and a real broker: the topic is created and
filled with kafka-python's admin client and producer, the group is read with
ConsumerGroupDescribe (``consumer_groups.py``), and the members reach the target through a
recording relay (``wiretap.py``) whose log says which API versions they used and what their
ConsumerGroupHeartbeats carried.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebalance_lab.protocol import codec
from tests.matrix.consumer_groups import ConsumerGroupView, GroupDescriber
from tests.matrix.harness import Member, wait_until
from tests.matrix.wiretap import WireTap

PARTITIONS = 6
BATCH = 60  # records per produce step: 10 per partition
JOIN_GROUP, CONSUMER_GROUP_HEARTBEAT = 11, 68

#: The broker's consumer-group timing (Kafka's defaults are a 45 s session, minimum 45 s, and 5 s
#: heartbeats): a SIGKILLed member is fenced 6 s after its last heartbeat. Both targets get these.
GROUP_SETTINGS: dict[str, int] = {
    "group.consumer.min.session.timeout.ms": 3000,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 500,
}


@dataclass(frozen=True)
class TargetInfo:
    name: str  # "emulator" or "real-kafka-4"
    bootstrap: str
    recording: Path | None = None  # the emulator's --record file
    broker: Any = None  # tests.support.kafka_broker.KafkaBroker, on the real broker


@dataclass
class Run:
    client_key: str
    assignor: str
    target: TargetInfo
    tap: WireTap
    topic: str
    group: str
    tmp: Path
    produced: set[tuple[int, int]] = field(default_factory=set)
    consumed: Counter[tuple[int, int]] = field(default_factory=Counter)
    members: dict[str, Member] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    assignors: list[str] = field(default_factory=list)  # what ConsumerGroupDescribe named, in order
    last_view: ConsumerGroupView | None = None
    _producer: Any = None
    _describer: GroupDescriber | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def prefix(self) -> str:
        return f"matrix-{self.client_key}-"

    def setup(self) -> None:
        from kafka import KafkaProducer
        from kafka.admin import KafkaAdminClient, NewTopic

        admin: Any = KafkaAdminClient(bootstrap_servers=self.target.bootstrap, client_id="matrix-admin")
        try:
            if self.topic not in admin.list_topics():  # the emulator creates it at start-up
                admin.create_topics([NewTopic(self.topic, num_partitions=PARTITIONS, replication_factor=1)])
            admin.wait_for_topics([self.topic], timeout_ms=30_000)
        finally:
            admin.close()
        self._producer = KafkaProducer(bootstrap_servers=self.target.bootstrap, client_id="matrix-producer",
                                       linger_ms=5)
        self._describer = GroupDescriber(self.target.bootstrap)

    def stop(self) -> None:
        """Kill what still runs, and keep the members' heartbeats (``heartbeats.jsonl``) for a look afterwards."""
        with (self.tmp / "heartbeats.jsonl").open("w") as out:
            for beat in self.tap.heartbeats_of(self.prefix):
                out.write(json.dumps(dataclasses.asdict(beat), default=str) + "\n")
        for member in self.members.values():
            member.stop()
        if self._producer is not None:
            self._producer.close()
        if self._describer is not None:
            self._describer.close()

    # -- records -------------------------------------------------------------------------------

    def on_records(self, records: list[tuple[int, int]]) -> None:
        with self._lock:
            self.consumed.update(records)

    def consumed_set(self) -> set[tuple[int, int]]:
        with self._lock:
            return set(self.consumed)

    def produce(self) -> None:
        futures = [self._producer.send(self.topic, value=f"r{i}".encode(), partition=i % PARTITIONS)
                   for i in range(BATCH)]
        self._producer.flush(30)
        for future in futures:
            meta = future.get(30)
            self.produced.add((meta.partition, meta.offset))

    def wait_all_consumed(self, timeout: float) -> float:
        def missing() -> set[tuple[int, int]]:
            return self.produced - self.consumed_set()

        return wait_until(lambda: not missing(), timeout,
                          lambda: f"{len(missing())} of {len(self.produced)} records never consumed, e.g. "
                          f"{sorted(missing())[:10]}")

    # -- members and the group -------------------------------------------------------------------

    def start(self, name: str, command: list[str]) -> None:
        args = ["--bootstrap", self.tap.bootstrap, "--topic", self.topic, "--group", self.group, "--member", name,
                "--assignor", self.assignor, "--group-protocol", "consumer"]
        self.members[name] = Member.spawn(name, [*command, *args], self.tmp / f"{name}.stderr", self.on_records)

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.process.poll() is None]

    def wait_for_members(self, count: int, timeout: float) -> float:
        """A settled group of ``count`` members whose live drivers' assignments partition the topic."""
        started = time.monotonic()
        wait_until(lambda: self._settled_with(count), timeout,
                   lambda: f"no Stable, reconciled group of {count} members; last seen: {self.last_view}")
        wait_until(self._assignments_cover_topic, 30.0, self._describe_assignments)
        return time.monotonic() - started

    def _settled_with(self, count: int) -> bool:
        exited = {m.name: m.process.poll() for m in self.members.values() if m.process.poll() is not None}
        assert len(self.live()) >= count, f"a driver exited early: exit codes {exited}"
        assert self._describer is not None
        view = self._describer.describe(self.group, self.topic)
        self.last_view = view
        if view is not None and view.assignor and view.assignor not in self.assignors:
            self.assignors.append(view.assignor)
        return view is not None and view.settled_with(count)

    def _assignments_cover_topic(self) -> bool:
        owned = [m.owned_now() for m in self.live()]
        return sum(len(o) for o in owned) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS))

    def _describe_assignments(self) -> str:
        return (f"live members' partitions do not cover 0..{PARTITIONS - 1} exactly once: "
                f"{ {m.name: sorted(m.owned_now()) for m in self.live()} }; group: {self.last_view}")

    # -- checks ----------------------------------------------------------------------------------

    def check_errors(self) -> None:
        errors = {m.name: m.errors() for m in self.members.values() if m.errors()}
        assert not errors, f"drivers reported errors: {errors}"

    def check_spoke_kip848(self) -> None:
        """Every member sent ConsumerGroupHeartbeat and none sent JoinGroup (no classic fallback)."""
        seen = self.tap.seen(self.prefix)
        heartbeating = {cid for cid, key, _v in seen if key == CONSUMER_GROUP_HEARTBEAT}
        joining = {cid for cid, key, _v in seen if key == JOIN_GROUP}
        assert heartbeating >= {self.prefix + n for n in "abc"}, f"ConsumerGroupHeartbeat only from {heartbeating}"
        assert not joining, f"classic JoinGroup from {joining}"

    def api_versions(self) -> dict[str, list[int]]:
        versions: dict[str, set[int]] = {}
        for _cid, key, version in self.tap.seen(self.prefix):
            versions.setdefault(codec.API_NAMES.get(key, f"api{key}"), set()).add(version)
        return {name: sorted(v) for name, v in sorted(versions.items())}

    def diagnostics(self) -> str:
        for member in self.members.values():
            member.dump_stacks()
        time.sleep(0.5)
        lines = [m.diagnostics() for m in self.members.values()]
        lines += ["--- the last ConsumerGroupHeartbeats:"]
        lines += [json.dumps(h.__dict__, default=str)[:600] for h in self.tap.heartbeats_of(self.prefix)[-12:]]
        if self.target.recording is not None and self.target.recording.exists():
            lines += ["--- the coordinator's last events:"]
            lines += self.target.recording.read_text(errors="replace").splitlines()[-25:]
        if self.target.broker is not None:
            lines += ["--- the broker's log (group coordinator lines):"]
            lines += [line for line in self.target.broker.logs().splitlines() if self.group in line][-25:]
        return "\n".join(lines)
