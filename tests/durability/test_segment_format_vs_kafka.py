"""A partition's segment file under ``--data-dir`` is byte for byte the segment Kafka 4.4.0 writes.

The same three batches are produced (Produce v11, acks=-1) to an emulator with a data directory and to
the real broker (``kafka_broker_4``); the emulator's ``<topic>-0/00000000000000000000.log`` must equal
the broker's, read from its log directory inside the container.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.emulator import start_emulator
from rebalance_lab.protocol import codec
from rebalance_lab.storage.segments import segment_name
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker
from tests.unit.dataplane.batches import make_batch

pytestmark = [pytest.mark.broker]

CREATE_TOPICS, PRODUCE = 19, 0
_CT = codec.request_type(CREATE_TOPICS)
_PR = codec.request_type(PRODUCE)
BROKER_LOG_DIR = "/tmp/kraft-combined-logs"  # log.dirs of the test broker (tests/support/kafka_broker.py)
BATCHES = [make_batch([b"a", b"b"]), make_batch([b"c"], [5_000]), make_batch([b"d", b"e", b"f"], [7, 8, 9])]


async def _write(bootstrap: str, topic: str) -> None:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = await RawConnection.open(host, int(port))
    try:
        created = await conn.request(CREATE_TOPICS, 7, timeout_ms=30_000, validate_only=False, topics=[
            _CT.CreatableTopic(name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])])
        assert created.topics[0].error_code == 0
        for batch in BATCHES:
            await _produce(conn, topic, batch)
    finally:
        await conn.close()


async def _produce(conn: RawConnection, topic: str, records: bytes) -> None:
    data = [_PR.TopicProduceData(name=topic, partition_data=[
        _PR.TopicProduceData.PartitionProduceData(index=0, records=records)])]
    for _ in range(100):  # a new topic on the broker needs a moment for its leader
        response = await conn.request(PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=5_000,
                                      topic_data=data)
        error: Any = response.responses[0].partition_responses[0].error_code
        if error == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{topic}: produce failed with {error}")


async def test_the_segment_file_equals_the_one_kafka_writes(kafka_broker_4: KafkaBroker, tmp_path: Path) -> None:
    topic = f"segment-{uuid.uuid4().hex[:8]}"
    server: EmulatorServer = await start_emulator(EmulatorConfig(port=0, data_dir=str(tmp_path)))
    try:
        await _write(server.bootstrap_servers, topic)
    finally:
        await server.stop()
    ours = (tmp_path / f"{topic}-0" / segment_name(0)).read_bytes()

    await _write(kafka_broker_4.bootstrap, topic)
    code, theirs = kafka_broker_4.container.exec(["cat", f"{BROKER_LOG_DIR}/{topic}-0/{segment_name(0)}"])
    assert code == 0, theirs
    assert len(ours) == sum(map(len, BATCHES))
    assert ours == theirs
