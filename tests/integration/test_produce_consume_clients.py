"""Real clients produce 1,000 keyed records to a 3-partition topic and read every one back.

Each client creates the topic with its own admin API (CreateTopics), produces with
keys (so its partitioner spreads the records over all three partitions), then
consumes in assign mode - no consumer group - from the beginning of every
partition. Run against 1 and 3 emulated brokers (``running_emulator``), uncompressed
and with every codec the client can use without extra packages: gzip for the Python
clients, gzip/snappy/lz4/zstd for librdkafka, which bundles them.

The synchronous clients (kafka-python, confluent-kafka) run in a worker thread so
that the in-process emulator keeps serving on the test's event loop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable

import pytest

from tests.integration.conftest import RunningEmulator

pytestmark = pytest.mark.clients

RECORDS = 1000
PARTITIONS = 3
DEADLINE_S = 30.0

# (partition, offset, key, value) of every record read back
Consumed = list[tuple[int, int, bytes, bytes]]


def _key(i: int) -> bytes:
    return f"key-{i}".encode()


def _value(i: int) -> bytes:
    return f"value-{i}".encode()


def _assert_every_record_read_once(consumed: Consumed) -> None:
    by_key = {key: value for _p, _o, key, value in consumed}
    assert len(consumed) == RECORDS, f"read {len(consumed)} records"
    assert by_key == {_key(i): _value(i) for i in range(RECORDS)}
    offsets: dict[int, list[int]] = defaultdict(list)
    for partition, offset, _k, _v in consumed:
        offsets[partition].append(offset)
    assert sorted(offsets) == list(range(PARTITIONS)), "keyed records should land on every partition"
    for partition, seen in offsets.items():
        assert seen == list(range(len(seen))), f"partition {partition} offsets are not 0..n-1 in order"


def _topic() -> str:
    return f"records-{uuid.uuid4().hex[:8]}"


# -- aiokafka ---------------------------------------------------------------------------


async def _aiokafka_round_trip(
    bootstrap: str, topic: str, compression: str | None, idempotent: bool = False
) -> Consumed:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.structs import TopicPartition

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5,
                                enable_idempotence=idempotent)
    await producer.start()
    try:
        sent = [await producer.send(topic, key=_key(i), value=_value(i)) for i in range(RECORDS)]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    consumed: Consumed = []
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + DEADLINE_S
        while len(consumed) < RECORDS and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                consumed.extend((r.partition, r.offset, r.key, r.value) for r in records)
    finally:
        await consumer.stop()
    return consumed


@pytest.mark.parametrize("compression", [None, "gzip"])
async def test_aiokafka_reads_back_every_record_it_produced(
    running_emulator: RunningEmulator, compression: str | None
) -> None:
    consumed = await _aiokafka_round_trip(running_emulator.bootstrap_servers, _topic(), compression)
    _assert_every_record_read_once(consumed)


# -- kafka-python -------------------------------------------------------------------------


def _kafka_python_round_trip(bootstrap: str, topic: str, compression: str | None) -> Consumed:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5)
    try:
        for i in range(RECORDS):
            producer.send(topic, key=_key(i), value=_value(i))
        producer.flush(timeout=DEADLINE_S)
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    consumed: Consumed = []
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + DEADLINE_S
        while len(consumed) < RECORDS and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                consumed.extend((r.partition, r.offset, r.key, r.value) for r in records)
    finally:
        consumer.close()
    return consumed


@pytest.mark.parametrize("compression", [None, "gzip"])
async def test_kafka_python_reads_back_every_record_it_produced(
    running_emulator: RunningEmulator, compression: str | None
) -> None:
    bootstrap = running_emulator.bootstrap_servers
    consumed = await asyncio.to_thread(_kafka_python_round_trip, bootstrap, _topic(), compression)
    _assert_every_record_read_once(consumed)


# -- confluent-kafka (librdkafka) -----------------------------------------------------------


def _confluent_create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(timeout=DEADLINE_S)


def _confluent_messages(consumer: object, want: int) -> Iterable[object]:
    deadline = time.monotonic() + DEADLINE_S
    seen = 0
    while seen < want and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.5):  # type: ignore[attr-defined]
            if message.error() is not None:
                raise AssertionError(f"consume error: {message.error()}")
            seen += 1
            yield message


def _confluent_round_trip(bootstrap: str, topic: str, compression: str, idempotent: bool = False) -> Consumed:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    _confluent_create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 5,
                         "enable.idempotence": idempotent})
    for i in range(RECORDS):
        producer.produce(topic, key=_key(i), value=_value(i))
    assert producer.flush(DEADLINE_S) == 0, "records left unsent"
    # group.id is required by the library but unused: assign() never joins a group.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "assign-only", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        return [(m.partition(), m.offset(), m.key(), m.value())  # type: ignore[attr-defined]
                for m in _confluent_messages(consumer, RECORDS)]
    finally:
        consumer.close()


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
async def test_confluent_kafka_reads_back_every_record_it_produced(
    running_emulator: RunningEmulator, compression: str
) -> None:
    bootstrap = running_emulator.bootstrap_servers
    consumed = await asyncio.to_thread(_confluent_round_trip, bootstrap, _topic(), compression)
    _assert_every_record_read_once(consumed)


# -- idempotent producers (InitProducerId, producer id and sequence in every batch) --------------
# kafka-python 3.0.12 is idempotent by default, so its tests above already cover it.


async def test_an_idempotent_aiokafka_producer_is_read_back_in_full(running_emulator: RunningEmulator) -> None:
    consumed = await _aiokafka_round_trip(running_emulator.bootstrap_servers, _topic(), None, idempotent=True)
    _assert_every_record_read_once(consumed)


async def test_an_idempotent_confluent_kafka_producer_is_read_back_in_full(running_emulator: RunningEmulator) -> None:
    bootstrap = running_emulator.bootstrap_servers
    consumed = await asyncio.to_thread(_confluent_round_trip, bootstrap, _topic(), "gzip", True)
    _assert_every_record_read_once(consumed)


# -- auto-creation through Metadata ---------------------------------------------------------


async def test_a_producer_auto_creates_its_topic_through_metadata(running_emulator: RunningEmulator) -> None:
    """KRaft answers the first Metadata for an unknown topic UNKNOWN_TOPIC_OR_PARTITION while it
    asks the controller to create it; the producer retries its metadata and then sends."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=running_emulator.bootstrap_servers, retry_backoff_ms=20)
    await producer.start()
    try:
        metadata = await asyncio.wait_for(producer.send_and_wait(_topic(), b"first"), DEADLINE_S)
    finally:
        await producer.stop()
    assert (metadata.partition, metadata.offset) == (0, 0)
