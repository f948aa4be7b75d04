"""Real clients of both protocols in one group (spec/kip848.md §7): kafka-python (classic protocol, eager range)
and confluent-kafka with ``group.protocol=consumer``, against the emulator and a real Kafka 4.4.0 broker.

kafka-python holds the group alone (a classic group); confluent-kafka joins (online upgrade: kafka-python is
told to rejoin and gets the coordinator's assignment through JoinGroup/SyncGroup); confluent-kafka closes (the
last consumer-protocol member leaves: the group goes back to classic and kafka-python takes every partition).
Both targets run with the lowered ``group.consumer.*`` settings of the KIP-848 client matrix (500 ms heartbeats).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.matrix.kip848_run import GROUP_SETTINGS
from tests.support.kafka_python_join import know_partitions_before_joining

pytestmark = pytest.mark.clients

PARTITIONS = 4
STEP_TIMEOUT_S = 45.0


class Polling:
    """A consumer polled by its own thread; its assignment is read in that thread only."""

    def __init__(self, poll: Callable[[], object], assignment: Callable[[], set[int]],
                 close: Callable[[], None]) -> None:
        self._poll, self._assignment, self._close = poll, assignment, close
        self.assigned: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._poll()
            self.assigned = self._assignment()
        self._close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(STEP_TIMEOUT_S)


def classic_consumer(bootstrap: str, group: str, topic: str) -> Polling:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    consumer: Any = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id="classic",
                                  partition_assignment_strategy=[RangePartitionAssignor], session_timeout_ms=10_000,
                                  heartbeat_interval_ms=500, auto_offset_reset="earliest", enable_auto_commit=False,
                                  # a leader that joined before its metadata had the new topic (seen once on a loaded
                                  # machine against the real broker) learns of it in 2 s and rejoins, not in 5 minutes
                                  metadata_max_age_ms=2_000)
    know_partitions_before_joining(consumer)  # short polls: kafka-python 3.0.12's lost rejoin (see the helper)
    return Polling(lambda: consumer.poll(timeout_ms=200), lambda: {tp.partition for tp in consumer.assignment()},
                   consumer.close)


def consumer_protocol_consumer(bootstrap: str, group: str, topic: str) -> Polling:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "client.id": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    return Polling(lambda: consumer.poll(0.2), lambda: {tp.partition for tp in consumer.assignment()},
                   consumer.close)


def create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="mixed-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
        # A real broker answers CreateTopics before its metadata has the topic: a consumer subscribing at once can
        # join as leader with no partitions to assign (seen in full runs). Wait until the metadata shows them all.
        wait_for(f"{topic}'s metadata", lambda: _partitions_in_metadata(admin, topic) == PARTITIONS)
    finally:
        admin.close()


def _partitions_in_metadata(admin: Any, topic: str) -> int:
    described = admin.describe_topics([topic])
    return len(described[0]["partitions"]) if described and described[0]["error_code"] == 0 else 0


def wait_for(what: str, check: Callable[[], bool], detail: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what} {detail()}"
        time.sleep(0.1)


def describe_group(bootstrap: str, group: str) -> str:
    """What the target says of the group, for a timeout's message (this test fails rarely, on the real broker only:
    the group's state and members tell which step stalled)."""
    from kafka.admin import KafkaAdminClient

    try:
        admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="mixed-describe")
        try:
            return repr(admin.describe_consumer_groups([group]))
        finally:
            admin.close()
    except Exception as exc:  # only a message: the timeout is the failure
        return f"(describing the group failed: {exc!r})"


@contextlib.contextmanager
def _target(name: str, request: pytest.FixtureRequest) -> Iterator[str]:
    if name == "real-kafka-4":
        yield request.getfixturevalue("kafka_brokers").get("4", dict(GROUP_SETTINGS)).bootstrap
        return
    from rebalance_lab.api import Emulator

    # group.consumer.session.timeout.ms -> consumer_session_timeout_ms (the Emulator's keyword options)
    settings: dict[str, Any] = {"consumer_" + k.removeprefix("group.consumer.").replace(".", "_"): v
                                for k, v in GROUP_SETTINGS.items()}
    with Emulator(initial_rebalance_delay_ms=0, **settings) as emu:
        yield emu.bootstrap_servers


@pytest.mark.parametrize("target", ["emulator", pytest.param("real-kafka-4", marks=pytest.mark.broker)])
def test_a_classic_and_a_consumer_protocol_client_share_a_group_and_hand_it_back(
        target: str, request: pytest.FixtureRequest) -> None:
    every = set(range(PARTITIONS))
    with _target(target, request) as bootstrap:
        topic, group = f"mixed-{uuid.uuid4().hex[:8]}", f"mixed-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic)
        classic = classic_consumer(bootstrap, group, topic)
        try:
            wait_for("the classic member to own every partition", lambda: classic.assigned == every,
                     lambda: f"(it owns {sorted(classic.assigned)}; the group: {describe_group(bootstrap, group)})")
            modern = consumer_protocol_consumer(bootstrap, group, topic)
            try:
                wait_for("the two members to split the partitions", lambda: (
                    bool(classic.assigned) and bool(modern.assigned) and not classic.assigned & modern.assigned
                    and classic.assigned | modern.assigned == every))
            finally:
                modern.close()
            wait_for("the classic member to own every partition again", lambda: classic.assigned == every,
                     lambda: f"(it owns {sorted(classic.assigned)}; the group: {describe_group(bootstrap, group)})")
        finally:
            classic.close()
