"""DeleteRecords and the log start offset it moves: the same raw requests to the emulator and to Kafka 4.4.0.

After DeleteRecords, ListOffsets' earliest is the new log start offset, a timestamp lookup finds nothing
below it, and Fetch below it is OFFSET_OUT_OF_RANGE (and reports the log start offset).
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.admin.diff_support import assert_same, create_topic, on_both
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker
from tests.unit.dataplane.batches import make_batch

pytestmark = [pytest.mark.broker]

PRODUCE, FETCH, LIST_OFFSETS, DELETE_RECORDS = 0, 1, 2, 21
_PR = codec.request_type(PRODUCE)
_FE = codec.request_type(FETCH)
_LO = codec.request_type(LIST_OFFSETS)
_DR = codec.request_type(DELETE_RECORDS)
_RETRIABLE = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_FOR_PARTITION,
              ErrorCode.LEADER_NOT_AVAILABLE}


async def produce(conn: RawConnection, topic: str, partition: int, count: int) -> int:
    now = int(time.time() * 1000)
    batch = make_batch([b"v%d" % i for i in range(count)], [now + i for i in range(count)])
    data = [_PR.TopicProduceData(name=topic, partition_data=[
        _PR.TopicProduceData.PartitionProduceData(index=partition, records=batch)])]
    for _ in range(100):  # a new topic on the broker needs a moment for its leader
        response = await conn.request(PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=5_000,
                                      topic_data=data)
        part = response.responses[0].partition_responses[0]
        if part.error_code not in _RETRIABLE:
            assert part.error_code == 0, part
            return int(part.base_offset)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{topic} never got a leader")


async def delete_records(conn: RawConnection, requests: list[tuple[str, int, int]], version: int = 2) -> list[Any]:
    topics: dict[str, list[Any]] = {}
    for name, partition, offset in requests:
        topics.setdefault(name, []).append(
            _DR.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=partition, offset=offset))
    response = await conn.request(DELETE_RECORDS, version, timeout_ms=30_000, topics=[
        _DR.DeleteRecordsTopic(name=n, partitions=ps) for n, ps in topics.items()])
    return sorted((t.name, p.partition_index, p.error_code, p.low_watermark)
                  for t in response.topics for p in t.partitions)


async def list_offsets(conn: RawConnection, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
    topics = [_LO.ListOffsetsTopic(name=topic, partitions=[_LO.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=partition, timestamp=timestamp, current_leader_epoch=-1)])]
    response = await conn.request(LIST_OFFSETS, 9, replica_id=-1, isolation_level=0, topics=topics)
    part = response.topics[0].partitions[0]
    return part.error_code, part.offset


async def fetch(conn: RawConnection, topic: str, partition: int, offset: int) -> tuple[int, int, int, int | None]:
    topics = [_FE.FetchTopic(topic=topic, partitions=[_FE.FetchTopic.FetchPartition(
        partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1_048_576)])]
    response = await conn.request(FETCH, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1_048_576,
                                  isolation_level=0, session_id=0, session_epoch=-1, topics=topics,
                                  forgotten_topics_data=[], rack_id="")
    part = response.responses[0].partitions[0]
    records = part.records or b""
    first = struct.unpack_from(">q", records)[0] if records else None
    return part.error_code, part.high_watermark, part.log_start_offset, first


async def _scenario(conn: RawConnection, s: str) -> list[Any]:
    t, compacted = f"dr-{s}", f"dr-compact-{s}"
    await create_topic(conn, t, 2)
    await create_topic(conn, compacted, 1, {"cleanup.policy": "compact"})
    for _ in range(3):
        await produce(conn, t, 0, 3)
    await produce(conn, t, 1, 3)
    await produce(conn, compacted, 0, 1)
    steps: list[Any] = [await delete_records(conn, [(t, 0, 4), (t, 1, -1), (compacted, 0, 1)])]
    steps.append(await delete_records(conn, [(t, 0, 2)]))
    steps.append(await delete_records(conn, [(t, 0, 100), (t, 7, 1), (f"none-{s}", 0, 1), (t, 1, -5)], version=0))
    for timestamp in (-2, -1, 0):
        steps.append(await list_offsets(conn, t, 0, timestamp))
    steps.append(await list_offsets(conn, t, 1, -2))
    for offset in (2, 4, 9, 10):
        steps.append(await fetch(conn, t, 0, offset))
    return steps


async def test_delete_records_moves_the_log_start_offset_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _scenario))


async def test_delete_records_moves_the_log_start_offset_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _scenario, Flavor.KAFKA_3))
