"""With --data-dir, a topic's config overrides set by IncrementalAlterConfigs survive a restart (they live in
the topic's record, as in Kafka's metadata log), and so does a log start offset DeleteRecords moved (Kafka's
log-start-offset-checkpoint)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from rebalance_lab.api import Emulator


def _retention(admin: AdminClient, topic: str) -> tuple[str, int]:
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    entry = next(iter(described.values())).result(10)["retention.ms"]
    return entry.value, entry.source


def test_altered_topic_configs_survive_a_restart_on_the_same_data_dir(tmp_path: Path) -> None:
    with Emulator(port=0, data_dir=str(tmp_path)) as emu:
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(10)
        change = ConfigResource(ConfigResource.Type.TOPIC, "kept", incremental_configs=[
            ConfigEntry("retention.ms", "4242", incremental_operation=AlterConfigOpType.SET)])
        next(iter(admin.incremental_alter_configs([change]).values())).result(10)
        before = _retention(admin, "kept")
    with Emulator(port=0, data_dir=str(tmp_path)) as emu:
        after = _retention(AdminClient({"bootstrap.servers": emu.bootstrap_servers}), "kept")
    assert before == after == ("4242", 1)  # TOPIC_CONFIG


def test_a_log_start_offset_moved_by_delete_records_survives_a_restart(tmp_path: Path) -> None:
    with Emulator(port=0, data_dir=str(tmp_path)) as emu:
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        admin.create_topics([NewTopic("trimmed", 1, 1)])["trimmed"].result(10)
        producer = Producer({"bootstrap.servers": emu.bootstrap_servers, "acks": "all"})
        for i in range(5):
            producer.produce("trimmed", value=b"%d" % i, partition=0)
        producer.flush(10)
        low = next(iter(admin.delete_records([TopicPartition("trimmed", 0, 3)]).values())).result(10).low_watermark
    with Emulator(port=0, data_dir=str(tmp_path)) as emu:
        consumer = Consumer({"bootstrap.servers": emu.bootstrap_servers, "group.id": "trimmed-g"})
        try:
            marks = consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=10)
        finally:
            consumer.close()
    assert (low, marks) == (3, (3, 5))
