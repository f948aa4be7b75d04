"""Real clients run consume-transform-produce with exactly-once against the emulator.

Each client reads an input topic in a consumer group, writes a transformed record per input record and
commits its consumer offsets inside the same transaction (``send_offsets_to_transaction``). One
transaction is aborted first. Then a read_committed consumer of the output sees every transformed
record exactly once and none of the aborted ones, a read_uncommitted consumer sees the aborted ones
too, and the group's committed offset is the end of the input.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from tests.support import kafka_tools
from tests.support.kafka_python_join import know_partitions_before_joining

pytestmark = pytest.mark.clients

RECORDS = 20
JAVA_PROGRAM = Path(__file__).resolve().parent / "java" / "EosTransform.java"
GO_PROGRAM = Path(__file__).resolve().parents[1] / "go" / "eos"
GO_BINARY = Path.home() / ".cache" / "rebalance-lab" / "go-eos" / "eos"
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator(initial_rebalance_delay_ms=0, port=0) as emu:
        yield emu


def _names() -> tuple[str, str, str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"in-{tag}", f"out-{tag}", f"group-{tag}", f"txn-{tag}"


def _fill_input(bootstrap: str, topic: str, sink: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1), NewTopic(sink, 2, 1)]).values():
        future.result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, key=str(i).encode(), value=f"in-{i}".encode())
    assert producer.flush(10) == 0


def _read_output(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    partitions = [TopicPartition(topic, p, 0) for p in range(2)]
    consumer.assign(partitions)
    values, at_end = [], set()
    try:
        while len(at_end) < len(partitions):
            message = consumer.poll(5.0)
            assert message is not None, "no end of partition reached"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values


def _confluent_transform(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> None:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(sink, key=b"x", value=f"aborted-{i}".encode())
    producer.flush(10)
    producer.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([source])
    done = 0
    try:
        while done < RECORDS:
            messages = consumer.consume(5, 5.0)
            if not messages:
                continue
            producer.begin_transaction()
            for message in messages:
                assert not message.error(), message.error()
                producer.produce(sink, key=message.key(), value=message.value().replace(b"in-", b"out-"))
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            done += len(messages)
    finally:
        consumer.close()


def _committed(bootstrap: str, source: str, group: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(source, p) for p in range(2)], 10)
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in found)


def test_confluent_kafka_consume_transform_produce_is_exactly_once(emulator: Emulator) -> None:
    source, sink, group, txn_id = _names()
    _fill_input(emulator.bootstrap_servers, source, sink)
    _confluent_transform(emulator.bootstrap_servers, source, sink, group, txn_id)
    committed = _read_output(emulator.bootstrap_servers, sink, "read_committed")
    assert sorted(committed) == sorted(f"out-{i}".encode() for i in range(RECORDS))
    uncommitted = _read_output(emulator.bootstrap_servers, sink, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == [f"aborted-{i}".encode() for i in range(5)]
    assert _committed(emulator.bootstrap_servers, source, group) == RECORDS


def _java_transform(bootstrap: str, source: str, sink: str, group: str, txn_id: str,
                    group_protocol: str = "classic") -> None:
    """The Java client (kafka-clients 4.4.0, from the kafka-tools Maven project's classpath)."""
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", kafka_tools.classpath(), str(JAVA_PROGRAM),
               bootstrap, source, sink, group, txn_id, str(RECORDS), group_protocol]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"transformed {RECORDS}" in done.stdout


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_the_java_client_consume_transform_produce_is_exactly_once(emulator: Emulator, group_protocol: str) -> None:
    """Also with a KIP-848 consumer group: TxnOffsetCommit then carries the member's epoch."""
    source, sink, group, txn_id = _names()
    _fill_input(emulator.bootstrap_servers, source, sink)
    _java_transform(emulator.bootstrap_servers, source, sink, group, txn_id, group_protocol)
    committed = _read_output(emulator.bootstrap_servers, sink, "read_committed")
    assert sorted(committed) == sorted(f"out-{i}".encode() for i in range(RECORDS))
    uncommitted = _read_output(emulator.bootstrap_servers, sink, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == [f"aborted-{i}".encode() for i in range(5)]
    assert _committed(emulator.bootstrap_servers, source, group) == RECORDS


def _kafka_python_transform(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(5):
        producer.send(sink, key=b"x", value=f"aborted-{i}".encode())
    producer.flush()
    producer.abort_transaction()
    consumer = KafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    know_partitions_before_joining(consumer)  # short polls: kafka-python 3.0.12's lost rejoin (see the helper)
    done = 0
    try:
        while done < RECORDS:
            batches = consumer.poll(timeout_ms=1000, max_records=5)
            if not batches:
                continue
            producer.begin_transaction()
            offsets = {}
            for tp, messages in batches.items():
                for message in messages:
                    producer.send(sink, key=message.key, value=message.value.replace(b"in-", b"out-"))
                    done += 1
                offsets[tp] = OffsetAndMetadata(messages[-1].offset + 1, "", -1)
            producer.send_offsets_to_transaction(offsets, group)
            producer.commit_transaction()
    finally:
        consumer.close()
        producer.close()


def _aiokafka_transform(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await producer.start()
        consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", isolation_level="read_committed")
        await consumer.start()
        try:
            await producer.begin_transaction()
            for i in range(5):
                await producer.send(sink, key=b"x", value=f"aborted-{i}".encode())
            await producer.abort_transaction()
            done = 0
            while done < RECORDS:
                batches = await consumer.getmany(timeout_ms=1000, max_records=5)
                if not batches:
                    continue
                async with producer.transaction():
                    offsets = {}
                    for tp, messages in batches.items():
                        for message in messages:
                            await producer.send(sink, key=message.key,
                                                value=message.value.replace(b"in-", b"out-"))
                            done += 1
                        offsets[tp] = messages[-1].offset + 1
                    await producer.send_offsets_to_transaction(offsets, group)
        finally:
            await consumer.stop()
            await producer.stop()

    asyncio.run(run())


@pytest.mark.parametrize("transform", [_kafka_python_transform, _aiokafka_transform], ids=["kafka-python", "aiokafka"])
def test_python_clients_consume_transform_produce_exactly_once(emulator: Emulator, transform: Any) -> None:
    source, sink, group, txn_id = _names()
    _fill_input(emulator.bootstrap_servers, source, sink)
    transform(emulator.bootstrap_servers, source, sink, group, txn_id)
    committed = _read_output(emulator.bootstrap_servers, sink, "read_committed")
    assert sorted(committed) == sorted(f"out-{i}".encode() for i in range(RECORDS))
    uncommitted = _read_output(emulator.bootstrap_servers, sink, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == [f"aborted-{i}".encode() for i in range(5)]
    assert _committed(emulator.bootstrap_servers, source, group) == RECORDS


def _franz_go_binary() -> Path:
    """``go build`` of tests/go/eos (franz-go from the module cache or the Go proxy), cached in ~/.cache."""
    sources = [GO_PROGRAM / name for name in ("main.go", "go.mod", "go.sum")]
    if GO_BINARY.exists() and all(GO_BINARY.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return GO_BINARY
    GO_BINARY.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["go", "build", "-buildvcs=false", "-o", str(GO_BINARY), "."], cwd=GO_PROGRAM,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, "go build failed: " + done.stdout[-2000:] + done.stderr[-2000:]
    return GO_BINARY


def test_franz_go_consume_transform_produce_is_exactly_once(emulator: Emulator) -> None:
    source, sink, group, txn_id = _names()
    _fill_input(emulator.bootstrap_servers, source, sink)
    done = subprocess.run([str(_franz_go_binary()), emulator.bootstrap_servers, source, sink, group, txn_id,
                           str(RECORDS)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    committed = _read_output(emulator.bootstrap_servers, sink, "read_committed")
    assert sorted(committed) == sorted(f"out-{i}".encode() for i in range(RECORDS))
    uncommitted = _read_output(emulator.bootstrap_servers, sink, "read_uncommitted")
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == [f"aborted-{i}".encode() for i in range(5)]
    assert _committed(emulator.bootstrap_servers, source, group) == RECORDS
