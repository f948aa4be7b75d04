"""Real admin clients against the emulator: confluent-kafka's AdminClient (librdkafka) and kafka-python's
KafkaAdminClient, calling the admin APIs the clients' own test suites use as setup steps."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from rebalance_lab.api import Emulator


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, brokers=1, initial_rebalance_delay_ms=0) as emu:
        yield emu


def _admin(emu: Emulator) -> AdminClient:
    return AdminClient({"bootstrap.servers": emu.bootstrap_servers})


def _create(admin: AdminClient, name: str, partitions: int = 1) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def test_confluent_incremental_alter_configs_sets_deletes_and_appends_topic_configs(emulator: Emulator) -> None:
    admin = _admin(emulator)
    _create(admin, "ck-configs")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "ck-configs", incremental_configs=[
        ConfigEntry("retention.ms", "12345", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "ck-configs")])
    configs = next(iter(described.values())).result(10)
    assert configs["retention.ms"].value == "12345"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    bad = ConfigResource(ConfigResource.Type.TOPIC, "ck-configs", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception, match="Not a number of type LONG"):
        next(iter(admin.incremental_alter_configs([bad]).values())).result(10)


def test_confluent_describe_configs_of_the_broker_reports_kafka_defaults(emulator: Emulator) -> None:
    admin = _admin(emulator)
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    configs = next(iter(admin.describe_configs([broker]).values())).result(10)
    assert configs["message.max.bytes"].value == "1048588"
    assert configs["node.id"].value == "0"
    assert configs["log.retention.hours"].is_read_only


def test_confluent_delete_records_then_the_consumer_starts_at_the_new_log_start(emulator: Emulator) -> None:
    admin = _admin(emulator)
    _create(admin, "ck-delete")
    producer = Producer({"bootstrap.servers": emulator.bootstrap_servers})
    for i in range(10):
        producer.produce("ck-delete", value=b"%d" % i, partition=0)
    producer.flush(10)
    deleted = admin.delete_records([TopicPartition("ck-delete", 0, 6)])
    result = next(iter(deleted.values())).result(10)
    assert result.low_watermark == 6
    consumer = Consumer({"bootstrap.servers": emulator.bootstrap_servers, "group.id": "ck-delete-g",
                         "auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("ck-delete", 0), timeout=10)
        assert (low, high) == (6, 10)
        consumer.assign([TopicPartition("ck-delete", 0)])
        message = None
        deadline = time.monotonic() + 10
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.offset() == 6
    finally:
        consumer.close()


def test_confluent_describe_cluster_and_describe_topics(emulator: Emulator) -> None:
    admin = _admin(emulator)
    _create(admin, "ck-described", 3)
    cluster = admin.describe_cluster(request_timeout=10).result(10)
    assert [node.id for node in cluster.nodes] == [0]
    assert cluster.controller is not None and cluster.controller.id == 0
    described = admin.describe_topics(TopicCollection(["ck-described"]))["ck-described"].result(10)
    assert [p.id for p in described.partitions] == [0, 1, 2]
    assert all(p.leader is not None and p.leader.id == 0 for p in described.partitions)


def test_kafka_python_admin_describes_and_alters_configs(emulator: Emulator) -> None:
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KpTopic

    admin = KafkaAdminClient(bootstrap_servers=emulator.bootstrap_servers)
    try:
        admin.create_topics([KpTopic("kp-configs", 1, 1)])
        admin.alter_configs([KpResource(ConfigResourceType.TOPIC, "kp-configs", configs={"retention.ms": "777"})])
        described = admin.describe_configs([KpResource(ConfigResourceType.TOPIC, "kp-configs")])
        text = repr(described)
        assert "777" in text
    finally:
        admin.close()


def test_kafka_python_admin_describes_the_cluster_partitions_log_dirs_and_config_resources() -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpTopic

    with Emulator(port=0, brokers=2) as emu:
        admin = KafkaAdminClient(bootstrap_servers=emu.bootstrap_servers)
        try:
            admin.create_topics([KpTopic("kp-described", 2, 1)])
            cluster = admin.describe_cluster()
            pages = admin.describe_topic_partitions(["kp-described"], response_partition_limit=1)
            dirs = admin.describe_log_dirs()
            resources = admin.list_config_resources()
            reassignments = admin.list_partition_reassignments()
        finally:
            admin.close()
    assert [b["broker_id"] for b in cluster["brokers"]] == [0, 1] and cluster["controller_id"] == 0
    assert [p["partition_index"] for p in pages["topics"][0]["partitions"]] == [0]
    assert pages["next_cursor"]["partition_index"] == 1  # paged at the limit of one partition
    held = sorted((d["broker"], p["partition_index"]) for d in dirs for ld in d["log_dirs"] for t in ld["topics"]
                  if t["name"] == "kp-described" for p in t["partitions"])
    assert sorted(i for _, i in held) == [0, 1] and {b for b, _ in held} == {0, 1}
    assert resources["topic"] == ["kp-described"] and resources["broker"] in (["0"], ["1"])  # the broker asked
    assert reassignments == {}
