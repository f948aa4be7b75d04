"""A KIP-848 (``consumer`` protocol) group driven through a real Kafka 4.x broker, and the evidence it leaves.

The replay reads what production brokers record about consumer groups: the coordinator's
``server.log`` lines and the ``__consumer_offsets`` records (through ``kafka-dump-log
--offsets-decoder``). No emulator recording can stand in for them, since the emulator speaks the
classic protocol only; so this module makes a real broker record a known history:

1. ``m1`` joins (uniform assignor, topic ``orders``), then ``m2``, then the static member ``m3``
   (``group.instance.id`` ``inst-3``): three rebalances, each handing partitions over;
2. ``m2`` closes (a LeaveGroup heartbeat): the coordinator fences it and bumps the epoch;
3. ``m3`` restarts (a new process under the same instance id): a static replacement;
4. ``m4`` joins from another process, which is then killed: the coordinator fences it when its
   session times out;
5. ``orders`` grows from 6 to 8 partitions: a metadata-driven bump;
6. everyone closes.

The coordinator's ``GroupMetadataManager`` logs at DEBUG for the run (the member assignment states
are DEBUG lines in 4.x), set through the broker-logger admin API. :func:`capture` returns the
broker's log, the dump of the offsets partition and the steps as they happened.

``python -m tests.support.kip848_capture OUT_DIR`` writes the samples the unit tests read
(``tests/unit/replay/samples/kafka-4.4-consumer-group.{log,dump.txt}``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kafka_broker import BrokerPool, KafkaBroker
from tests.support.kafka_tools import copy_from_container, dump_log

#: Broker settings that make a fenced member go after 6 s instead of 45 s, and heartbeats come every second.
SETTINGS: dict[str, str | int | bool] = {
    "group.consumer.min.session.timeout.ms": 3000,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.heartbeat.interval.ms": 1000,
}
GROUP = "orders-848"
TOPIC = "orders"
COORDINATOR_LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
OFFSETS_SEGMENT = "/tmp/kraft-combined-logs/__consumer_offsets-0/00000000000000000000.log"
SAMPLE_LOG = "kafka-4.4-consumer-group.log"
SAMPLE_DUMP = "kafka-4.4-consumer-group.dump.txt"
SETTLE_S = 4.0  # long enough for every member to heartbeat a few times and reconcile


@dataclass
class Step:
    name: str
    member: str | None
    at_ms: int


@dataclass
class Capture:
    log: str
    dump: str
    steps: list[Step] = field(default_factory=list)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def consumer_config(bootstrap: str, instance: str | None = None, group: str = GROUP) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                              "group.remote.assignor": "uniform", "auto.offset.reset": "earliest",
                              "enable.auto.commit": False}
    if instance is not None:
        config["group.instance.id"] = instance
    return config


class Member:
    """A confluent-kafka (librdkafka) consumer in this process, polled by its own thread."""

    def __init__(self, bootstrap: str, instance: str | None = None, *, group: str = GROUP, topic: str = TOPIC) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(consumer_config(bootstrap, instance, group))
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.2)
            self._polled()

    def _polled(self) -> None:
        """Called on the polling thread after each poll."""

    def member_id(self) -> str:
        return str(self.consumer.memberid() or "")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.consumer.close()


def set_coordinator_log_level(bootstrap: str, level: str) -> None:
    """The level of the coordinator's ``GroupMetadataManager`` logger on the running broker (broker-logger API)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-capture")
    try:
        resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, "1", configs={COORDINATOR_LOGGER: level})
        admin.alter_configs([resource])
    finally:
        admin.close()


def _create_topic(bootstrap: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-capture")
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)])
        admin.wait_for_topics([TOPIC], timeout_ms=30000)
    finally:
        admin.close()


def _grow_topic(bootstrap: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions

    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-capture")
    try:
        admin.create_partitions({TOPIC: NewPartitions(total_count=partitions)})
    finally:
        admin.close()


_CHILD = """
import sys, time
from confluent_kafka import Consumer
sys.path.insert(0, {root!r})
from tests.support.kip848_capture import consumer_config
c = Consumer(consumer_config({bootstrap!r}))
c.subscribe([{topic!r}])
while True:
    c.poll(0.2)
    member = c.memberid()
    if member:
        print(member, flush=True)
"""


@contextlib.contextmanager
def _child_member(bootstrap: str) -> Iterator[subprocess.Popen[str]]:
    """A member in another process (killed without leaving the group)."""
    root = str(Path(__file__).resolve().parents[2])
    code = _CHILD.format(root=root, bootstrap=bootstrap, topic=TOPIC)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def run_history(broker: KafkaBroker) -> list[Step]:
    """Drive the group through the module docstring's history; the steps with their wall-clock times."""
    bootstrap = broker.bootstrap
    _create_topic(bootstrap, 6)
    set_coordinator_log_level(bootstrap, "DEBUG")
    steps: list[Step] = []

    def step(name: str, member: str | None) -> None:
        steps.append(Step(name, member, _now_ms()))

    members: dict[str, Member] = {}
    try:
        for name, instance in (("m1", None), ("m2", None), ("m3", "inst-3")):
            step(f"{name} joins", name)
            members[name] = Member(bootstrap, instance)
            time.sleep(SETTLE_S)
        step("m2 leaves", "m2")
        members.pop("m2").close()
        time.sleep(SETTLE_S)
        step("m3 restarts", "m3")
        members.pop("m3").close()
        members["m3"] = Member(bootstrap, "inst-3")
        time.sleep(SETTLE_S)
        with _child_member(bootstrap) as child:
            step("m4 joins", "m4")
            assert child.stdout is not None
            child.stdout.readline()  # its member id: it has joined
            time.sleep(SETTLE_S)
            step("m4 is killed", "m4")
            child.send_signal(signal.SIGKILL)
        time.sleep(float(SETTINGS["group.consumer.session.timeout.ms"]) / 1000 + SETTLE_S)
        step("orders grows to 8 partitions", None)
        _grow_topic(bootstrap, 8)
        time.sleep(SETTLE_S * 2)
    finally:
        for name, member in members.items():
            step(f"{name} closes", name)
            member.close()
    time.sleep(1.0)
    return steps


def dump_offsets(broker: KafkaBroker) -> str:
    """``kafka-dump-log --offsets-decoder`` of the offsets partition (its segment copied out of the container)."""
    with tempfile.TemporaryDirectory() as scratch:
        # in a directory named as the broker's, so the dump's "Dumping <path>" names the offsets partition
        target = Path(scratch) / Path(OFFSETS_SEGMENT).parent.name
        target.mkdir()
        return dump_log(copy_from_container(broker.container, OFFSETS_SEGMENT, target))


def capture(broker: KafkaBroker) -> Capture:
    steps = run_history(broker)
    log = broker.logs()
    if f"[GroupId {GROUP}] Bumped group epoch to " not in log:
        raise RuntimeError(f"the broker ran no consumer-protocol group {GROUP} (is KIP-848 enabled?):\n{log[-3000:]}")
    return Capture(log, dump_offsets(broker), steps)


def broker_lines(log: str) -> str:
    """The broker's own log from the topic's creation on: without the start script's lines and the broker's
    start-up (a server.log excerpt an operator would send)."""
    lines = log.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if f"Replayed TopicRecord for topic {TOPIC} " in line), 0)
    return "".join(line for line in lines[start:] if line.startswith("["))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the log, the dump and the steps go")
    args = parser.parse_args(argv)
    pool = BrokerPool()
    try:
        broker = pool.get("4", SETTINGS)
        result = capture(broker)
    finally:
        pool.close()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / SAMPLE_LOG).write_text(broker_lines(result.log))
    (args.out / SAMPLE_DUMP).write_text(result.dump)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
