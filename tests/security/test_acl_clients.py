"""Real clients see the authorizer's refusals as Kafka's: kafka-python raises, confluent-kafka reports the codes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebalance_lab.api import Emulator

pytestmark = [pytest.mark.clients]


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    acls = {"acls": [
        {"principal": "User:*", "operation": "ALL", "resource_type": "GROUP", "resource_name": "denied-group",
         "permission": "DENY"},
        {"principal": "User:bob", "operation": "WRITE", "resource_type": "TOPIC", "resource_name": "bobs"},
    ]}
    path = tmp_path / "acls.json"
    path.write_text(json.dumps(acls))
    with Emulator(acl_file=str(path), allow_everyone_if_no_acl_found=True, topics=[("orders", 1), ("bobs", 1)],
                  initial_rebalance_delay_ms=0) as emu:
        yield emu


def test_kafka_python_raises_group_and_topic_authorization_errors(emulator: Emulator) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    consumer = KafkaConsumer("orders", bootstrap_servers=emulator.bootstrap_servers, group_id="denied-group",
                             consumer_timeout_ms=5_000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=5_000)
    finally:
        consumer.close()
    producer = KafkaProducer(bootstrap_servers=emulator.bootstrap_servers, max_block_ms=5_000, retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("bobs", b"v").get(timeout=10)
        producer.send("orders", b"v").get(timeout=10)  # an open topic still works
    finally:
        producer.close()


def test_confluent_kafka_consumer_and_producer_get_the_authorization_codes(emulator: Emulator) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer

    consumer = Consumer({"bootstrap.servers": emulator.bootstrap_servers, "group.id": "denied-group",
                         "auto.offset.reset": "earliest"})
    errors: list[int] = []
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and KafkaError.GROUP_AUTHORIZATION_FAILED not in errors:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                errors.append(message.error().code())
    finally:
        consumer.close()
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    reports: list[int] = []
    producer = Producer({"bootstrap.servers": emulator.bootstrap_servers, "message.timeout.ms": 10_000})
    producer.produce("bobs", b"v", on_delivery=lambda err, _msg: reports.append(err.code() if err else 0))
    producer.flush(15)
    assert reports == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
