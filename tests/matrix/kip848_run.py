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
from tests.matrix.driver_run import PARTITIONS, DriverRun
from tests.matrix.harness import Member, wait_until
from tests.matrix.wiretap import WireTap

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
class Run(DriverRun):
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
    producer: Any = None
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
        self.producer = KafkaProducer(bootstrap_servers=self.target.bootstrap, client_id="matrix-producer",
                                       linger_ms=5)
        self._describer = GroupDescriber(self.target.bootstrap)

    def stop(self) -> None:
        """Kill what still runs, and keep the members' heartbeats (``heartbeats.jsonl``) for a look afterwards."""
        with (self.tmp / "heartbeats.jsonl").open("w") as out:
            for beat in self.tap.heartbeats_of(self.prefix):
                out.write(json.dumps(dataclasses.asdict(beat), default=str) + "\n")
        for member in self.members.values():
            member.stop()
        if self.producer is not None:
            self.producer.close()
        if self._describer is not None:
            self._describer.close()

    # -- members and the group -------------------------------------------------------------------

    def start(self, name: str, command: list[str]) -> None:
        args = ["--bootstrap", self.tap.bootstrap, "--topic", self.topic, "--group", self.group, "--member", name,
                "--assignor", self.assignor, "--group-protocol", "consumer"]
        self.members[name] = Member.spawn(name, [*command, *args], self.tmp / f"{name}.stderr", self.on_records)

    def wait_for_members(self, count: int, timeout: float) -> float:
        """A settled group of ``count`` members whose live drivers' assignments partition the topic."""
        started = time.monotonic()
        wait_until(lambda: self._settled_with(count), timeout,
                   lambda: f"no Stable, reconciled group of {count} members; last seen: {self.last_view}")
        self.wait_assignments_cover_topic(30.0)
        return time.monotonic() - started

    def group_summary(self) -> str:
        return str(self.last_view)

    def _settled_with(self, count: int) -> bool:
        self.assert_live(count)
        assert self._describer is not None
        view = self._describer.describe(self.group, self.topic)
        self.last_view = view
        if view is not None and view.assignor and view.assignor not in self.assignors:
            self.assignors.append(view.assignor)
        return view is not None and view.settled_with(count)

    # -- checks ----------------------------------------------------------------------------------

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
        lines = self.member_diagnostics()
        lines += ["--- the last ConsumerGroupHeartbeats:"]
        lines += [json.dumps(h.__dict__, default=str)[:600] for h in self.tap.heartbeats_of(self.prefix)[-12:]]
        if self.target.recording is not None and self.target.recording.exists():
            lines += ["--- the coordinator's last events:"]
            lines += self.target.recording.read_text(errors="replace").splitlines()[-25:]
        if self.target.broker is not None:
            lines += ["--- the broker's log (group coordinator lines):"]
            lines += [line for line in self.target.broker.logs().splitlines() if self.group in line][-25:]
        return "\n".join(lines)
