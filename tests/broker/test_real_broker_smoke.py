"""Smoke tests of the real Apache Kafka brokers the differential tests compare with.

For each release line (4.x and 3.9.x): kafka-python produces and consumes records, and a
consumer group of two members forms with a partition each.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from tests.support.kafka_broker import DEFAULT_SETTINGS, KafkaBroker
from tests.support.kafka_python_join import know_partitions_before_joining

pytestmark = pytest.mark.broker

GROUP_TIMEOUT = 60.0


def _create_topic(broker: KafkaBroker, partitions: int) -> str:
    topic = f"smoke-{uuid.uuid4().hex[:10]}"
    admin: Any = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="smoke-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        admin.wait_for_topics([topic], timeout_ms=30000)
    finally:
        admin.close()
    return topic


def test_broker_is_up(kafka_broker: KafkaBroker) -> None:
    print(f"\n{kafka_broker.describe()}")
    admin: Any = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap, client_id="smoke-admin")
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    # The broker advertises the address the tests connect to (the port is mapped 1:1).
    assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [(host, int(port))]


def test_session_settings_reach_the_broker(kafka_broker: KafkaBroker) -> None:
    if kafka_broker.source == "external":
        pytest.skip("an existing broker has its operator's settings")
    names = ["group.initial.rebalance.delay.ms", "offsets.topic.num.partitions", "auto.create.topics.enable"]
    admin: Any = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap, client_id="smoke-admin")
    try:
        # config_filter="all": kafka-python's default ("modified") leaves out static broker configs.
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", configs=names)], config_filter="all"
        )["broker"]["1"]
    finally:
        admin.close()
    assert {name: configs[name]["value"] for name in names} == {name: DEFAULT_SETTINGS[name] for name in names}


def test_produce_and_consume(kafka_broker: KafkaBroker) -> None:
    topic = _create_topic(kafka_broker, partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all", linger_ms=5)
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(20)}
    try:
        for key, value in sent.items():
            producer.send(topic, key=key, value=value)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=f"smoke-consume-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    know_partitions_before_joining(consumer)  # short polls: kafka-python 3.0.12's lost rejoin (see the helper)
    received: dict[bytes, bytes] = {}
    deadline = time.monotonic() + GROUP_TIMEOUT
    try:
        while len(received) < len(sent) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    received[record.key] = record.value
        consumer.commit()
        committed = {p: consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
    finally:
        consumer.close()
    assert received == sent
    assert sum(offset or 0 for offset in committed.values()) == len(sent)


def test_two_member_group_forms(kafka_broker: KafkaBroker) -> None:
    topic = _create_topic(kafka_broker, partitions=2)
    group = f"smoke-group-{uuid.uuid4().hex[:8]}"
    stop = threading.Event()
    assignments: dict[int, set[int]] = {0: set(), 1: set()}
    errors: list[BaseException] = []
    ready = threading.Barrier(2)

    def member(index: int) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=kafka_broker.bootstrap,
            group_id=group,
            client_id=f"smoke-member-{index}",
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
        )
        try:
            # Join with the topic's partitions already known. Joining before the member has
            # them makes the leader assign nothing, then rejoin when its metadata catches up;
            # kafka-python 3.0.12's leader was seen to hang for good in that second rebalance.
            deadline = time.monotonic() + 30
            while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
                time.sleep(0.1)
            consumer.subscribe([topic])
            ready.wait(timeout=30)
            while not stop.is_set():
                consumer.poll(timeout_ms=1000)
                assignments[index] = {tp.partition for tp in consumer.assignment()}
        except BaseException as exc:
            errors.append(exc)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in (0, 1)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    description: dict[str, Any] = {}
    final: dict[int, set[int]] = {}
    admin: Any = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap, client_id="smoke-admin")
    try:
        # Formed: each member holds one partition and the coordinator says the group is
        # Stable with two members (a client may still start one more rebalance right after
        # the first assignment, e.g. when its metadata changes).
        while time.monotonic() - started < GROUP_TIMEOUT and not errors:
            final = {i: set(a) for i, a in assignments.items()}
            if all(len(a) == 1 for a in final.values()) and final[0] != final[1]:
                description = admin.describe_groups([group])[group]
                if description["group_state"] == "Stable" and len(description["members"]) == 2:
                    break
            time.sleep(0.1)
        formed_after = time.monotonic() - started
    finally:
        admin.close()
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    print(f"\n{kafka_broker.describe()}: group of 2 formed in {formed_after:.1f} s: {final}")
    assert not errors, errors
    assert final[0] | final[1] == {0, 1}
    assert final[0] and final[1] and not final[0] & final[1]
    assert description["error"] is None, description
    assert description["group_state"] == "Stable", description
    assert len(description["members"]) == 2
