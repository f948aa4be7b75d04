"""What ``--data-dir`` brings back after a stop and start of the Python API's emulator, and what it does
not change without a data directory."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rebalance_lab.api import Emulator
from rebalance_lab.storage.segments import segment_name
from tests.durability.server_process import ROOT, ServeProcess, free_port


def _produce(bootstrap: str, topic: str, values: list[bytes], **settings: object) -> list[tuple[int, int]]:
    placed: list[tuple[int, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **settings})
    for value in values:
        producer.produce(topic, value=value, partition=0,
                         on_delivery=lambda err, msg: placed.append((msg.partition(), msg.offset())) if err is None
                         else None)
    assert producer.flush(30) == 0
    return placed


def _read(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 0, 0)])
    found: list[tuple[int, bytes]] = []
    idle = 0
    while idle < 3:
        batch = [m for m in reader.consume(500, 0.3) if m.error() is None]
        idle = 0 if batch else idle + 1
        found += [(m.offset(), m.value()) for m in batch]
    reader.close()
    return found


def test_topics_configs_records_and_offsets_with_metadata_come_back(tmp_path: Path) -> None:
    configs = {"retention.ms": "4242", "cleanup.policy": "compact", "max.message.bytes": "200000"}
    with Emulator(data_dir=str(tmp_path)) as emu:
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 4, 1, config=configs)])["kept"].result(30)
        before = emu.server.world.cluster.topics["kept"]
        values = [b"value-%d" % i for i in range(30)]
        _produce(emu.bootstrap_servers, "kept", values)
        committer = Consumer({"bootstrap.servers": emu.bootstrap_servers, "group.id": "simple"})
        committer.commit(offsets=[TopicPartition("kept", 0, 17, metadata="checkpoint-a", leader_epoch=0),
                                  TopicPartition("kept", 3, 2)], asynchronous=False)
        committer.close()
        offsets_before = emu.offsets("simple")
    assert (tmp_path / "kept-0" / segment_name(0)).is_file()
    with Emulator(data_dir=str(tmp_path)) as emu:
        after = emu.server.world.cluster.topics["kept"]
        assert (after.topic_id, len(after.partitions), after.configs) == (before.topic_id, 4, before.configs)
        assert after.configs == configs
        assert emu.offsets("simple") == offsets_before
        # (librdkafka sends the metadata with a trailing NUL; it is stored and returned as sent)
        assert [row["metadata"].rstrip("\0") for row in emu.offsets("simple")] == ["checkpoint-a", ""]
        assert _read(emu.bootstrap_servers, "kept") == list(enumerate(values))
        # the log goes on from where it was
        assert _produce(emu.bootstrap_servers, "kept", [b"next"]) == [(0, 30)]


def test_a_new_idempotent_producer_after_a_restart_gets_a_producer_id_no_stored_batch_has(tmp_path: Path) -> None:
    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)]) as emu:
        _produce(emu.bootstrap_servers, "t", [b"a", b"b", b"c"], **{"enable.idempotence": True, "linger.ms": 50})
    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)]) as emu:
        # same first sequence numbers as the first producer: with a reused producer id they were "duplicates"
        placed = _produce(emu.bootstrap_servers, "t", [b"d", b"e", b"f"],
                          **{"enable.idempotence": True, "linger.ms": 50})
        assert placed == [(0, 3), (0, 4), (0, 5)]
        assert [v for _o, v in _read(emu.bootstrap_servers, "t")] == [b"a", b"b", b"c", b"d", b"e", b"f"]


def test_a_deleted_topic_leaves_no_directory_and_comes_back_empty_when_created_again(tmp_path: Path) -> None:
    with Emulator(data_dir=str(tmp_path), topics=[("gone", 1)]) as emu:
        _produce(emu.bootstrap_servers, "gone", [b"old"])
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        admin.delete_topics(["gone"])["gone"].result(30)
        assert not (tmp_path / "gone-0").exists()
        admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result(30)
    with Emulator(data_dir=str(tmp_path)) as emu:
        assert "gone" in emu.server.world.cluster.topics
        assert _read(emu.bootstrap_servers, "gone") == []


def test_a_log_directory_of_an_unknown_topic_is_removed_with_a_log_line(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    stray = tmp_path / "stray-0"
    stray.mkdir(parents=True)
    (stray / "partition.metadata").write_text("version: 0\ntopic_id: 00000000-0000-0000-0000-000000000001\n")
    with caplog.at_level(logging.WARNING, "rebalance_lab.storage"), Emulator(data_dir=str(tmp_path)):
        pass
    assert not stray.exists()
    assert "stray-0: no such topic" in caplog.text


def test_a_torn_segment_tail_is_truncated_at_start_up_with_a_log_line(tmp_path: Path) -> None:
    serve = ServeProcess(free_port(), tmp_path / "data", "--topic", "t:1")
    serve.start()
    try:
        _produce(serve.bootstrap, "t", [b"x%d" % i for i in range(5)])
        serve.kill()
        segment = tmp_path / "data" / "t-0" / segment_name(0)
        intact = segment.read_bytes()
        segment.write_bytes(intact + intact[:30])  # a batch the process was writing when it died
        serve.start()
        assert f"{segment}: torn write at byte {len(intact)}: truncating 30 bytes" in serve.output()
        assert [v for _o, v in _read(serve.bootstrap, "t")] == [b"x%d" % i for i in range(5)]
    finally:
        serve.stop()


def test_a_corrupt_segment_stops_serve_with_an_error_naming_the_file(tmp_path: Path) -> None:
    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)]) as emu:
        _produce(emu.bootstrap_servers, "t", [b"one"])
        _produce(emu.bootstrap_servers, "t", [b"two"])
    segment = tmp_path / "t-0" / segment_name(0)
    data = bytearray(segment.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records: its CRC fails, and a valid batch follows
    segment.write_bytes(bytes(data))
    result = subprocess.run([sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", "--data-dir",
                             str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 1
    assert f"rebalance-lab: error: {segment}: corrupt data at byte 0" in result.stderr
    assert segment.read_bytes() == bytes(data)  # left as it was for the operator


def test_a_second_serve_on_the_same_data_directory_is_refused(tmp_path: Path) -> None:
    with Emulator(data_dir=str(tmp_path)):
        result = subprocess.run([sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", "--data-dir",
                                 str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 1
    assert "the data directory is in use by another process" in result.stderr


def test_without_a_data_directory_nothing_is_written_and_the_storage_code_is_not_loaded(tmp_path: Path) -> None:
    script = ("import sys; from rebalance_lab.api import Emulator\n"
              "with Emulator(topics=[('t', 1)]) as emu: pass\n"
              "print('rebalance_lab.storage' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert result.stdout.strip() == "False", result.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_flush_ms_fsyncs_what_was_written_when_its_interval_passes(tmp_path: Path) -> None:
    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)], flush_ms=1_000, manual_clock=True) as emu:
        _produce(emu.bootstrap_servers, "t", [b"a", b"b"])
        storage = emu.server.world.services["storage"]
        assert sum(log.unflushed for log in storage.segment_logs()) == 2  # written, not yet fsynced
        emu.advance(999)
        assert sum(log.unflushed for log in storage.segment_logs()) == 2
        emu.advance(1)
        assert sum(log.unflushed for log in storage.segment_logs()) == 0


def test_log_start_offsets_raised_by_delete_records_are_checkpointed_and_come_back(tmp_path: Path) -> None:
    checkpoint = tmp_path / "log-start-offset-checkpoint"
    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)], manual_clock=True) as emu:
        _produce(emu.bootstrap_servers, "t", [b"r%d" % i for i in range(10)])
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        deleted = admin.delete_records([TopicPartition("t", 0, 4)])
        assert next(iter(deleted.values())).result(30).low_watermark == 4
        emu.advance(59_999)
        assert not checkpoint.exists()
        emu.advance(1)  # log.flush.start.offset.checkpoint.interval.ms, Kafka's 60 s
        assert checkpoint.read_text() == "0\n1\nt 0 4\n"
        admin.delete_records([TopicPartition("t", 0, 6)])[TopicPartition("t", 0, 6)].result(30)
    assert checkpoint.read_text() == "0\n1\nt 0 6\n"  # and at a clean stop
    with Emulator(data_dir=str(tmp_path)) as emu:
        reader = Consumer({"bootstrap.servers": emu.bootstrap_servers, "group.id": "w"})
        assert reader.get_watermark_offsets(TopicPartition("t", 0), timeout=30) == (6, 10)
        reader.close()


def test_committed_and_aborted_transactions_read_the_same_after_a_restart(tmp_path: Path) -> None:
    def read_committed(bootstrap: str) -> list[bytes]:
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "rc", "isolation.level": "read_committed",
                           "enable.auto.commit": False})
        reader.assign([TopicPartition("t", 0, 0)])
        found: list[bytes] = []
        idle = 0
        while idle < 3:
            batch = [m for m in reader.consume(100, 0.3) if m.error() is None]
            idle = 0 if batch else idle + 1
            found += [m.value() for m in batch]
        watermarks = reader.get_watermark_offsets(TopicPartition("t", 0), timeout=30)
        reader.close()
        return [*found, b"hw=%d" % watermarks[1]]

    with Emulator(data_dir=str(tmp_path), topics=[("t", 1)]) as emu:
        producer = Producer({"bootstrap.servers": emu.bootstrap_servers, "transactional.id": "tx"})
        producer.init_transactions(30)
        for values, commit in (([b"c1", b"c2"], True), ([b"a1"], False), ([b"c3"], True)):
            producer.begin_transaction()
            for value in values:
                producer.produce("t", value=value, partition=0)
            assert producer.flush(30) == 0  # in the log before the transaction ends, aborted ones too
            (producer.commit_transaction if commit else producer.abort_transaction)(30)
        before = read_committed(emu.bootstrap_servers)
    assert before == [b"c1", b"c2", b"c3", b"hw=7"]  # four records and three markers in the log
    with Emulator(data_dir=str(tmp_path)) as emu:
        assert read_committed(emu.bootstrap_servers) == before
