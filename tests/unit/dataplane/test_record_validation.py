"""Every record of a produced batch is read before it enters the log (issue 17, defect 3).

The table of payloads and answers is Kafka 4.4.0's (``tests/support/bad_batches.py``; the differential
test ``integration/test_kafka_limits.py`` sends the same bytes to the real broker). Before this, a
72-byte batch claiming 2^31-1 records was stored, and ListOffsets by timestamp then failed with
UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode
from tests.support import bad_batches
from tests.unit.dataplane.batches import make_batch
from tests.unit.dataplane.harness import call, request_class

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
PRODUCE_TOPIC = request_class(PRODUCE, "TopicProduceData")
PRODUCE_PARTITION = request_class(PRODUCE, "PartitionProduceData")
LIST_TOPIC = request_class(LIST_OFFSETS, "ListOffsetsTopic")
LIST_PARTITION = request_class(LIST_OFFSETS, "ListOffsetsPartition")
FETCH_TOPIC = request_class(FETCH, "FetchTopic")
FETCH_PARTITION = request_class(FETCH, "FetchPartition")
NOW = 1_795_682_156_146  # the broker's clock when the table was recorded
CASES = bad_batches.cases()


@dataclass
class FixedClock:
    """A wall clock that does not move (the timestamp window is checked against the broker's wall clock)."""

    now: int = NOW
    manual = False

    def now_ms(self) -> int:
        return self.now


def _world(flavor: Flavor = Flavor.KAFKA_4) -> World:
    world = World(EmulatorConfig(port=0, flavor=flavor), [BrokerInfo(0, "127.0.0.1", 9092, None)], FixedClock())
    world.cluster.create_topic("t", 1)
    return world


async def _produce(world: World, records: bytes) -> Any:
    data = [PRODUCE_TOPIC(name="t", partition_data=[PRODUCE_PARTITION(index=0, records=records)])]
    response = await call(world, PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=1000, topic_data=data)
    return response.responses[0].partition_responses[0]


async def _offsets(world: World) -> list[tuple[int, int]]:
    answers = []
    for timestamp in (-1, -2, -3, 0):  # latest, earliest, max timestamp, by timestamp
        topic = LIST_TOPIC(name="t", partitions=[LIST_PARTITION(partition_index=0, timestamp=timestamp,
                                                                current_leader_epoch=-1)])
        response = await call(world, LIST_OFFSETS, 9, replica_id=-1, isolation_level=0, topics=[topic])
        part = response.topics[0].partitions[0]
        answers.append((part.error_code, part.offset))
    return answers


async def _fetched(world: World) -> bytes:
    partition = FETCH_PARTITION(partition=0, fetch_offset=0, partition_max_bytes=1 << 20, log_start_offset=-1,
                                current_leader_epoch=-1, last_fetched_epoch=-1)
    response = await call(world, FETCH, 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                          isolation_level=0, session_id=0, session_epoch=-1,
                          topics=[FETCH_TOPIC(topic="t", partitions=[partition])], forgotten_topics_data=[], rack_id="")
    part = response.responses[0].partitions[0]
    assert part.error_code == 0
    return bytes(part.records or b"")


@pytest.mark.parametrize("name", list(CASES))
async def test_a_produced_batch_gets_kafkas_answer_and_only_a_valid_one_is_stored(name: str) -> None:
    case = CASES[name]
    world = _world()
    answer = await _produce(world, case.data)
    assert (answer.error_code, answer.error_message, list(answer.record_errors)) == (case.code, case.message, [])
    stored = 1 if case.code == ErrorCode.NONE else 0
    assert answer.base_offset == (0 if stored else -1)
    assert [code for code, _offset in await _offsets(world)] == [0, 0, 0, 0]  # never UNKNOWN_SERVER_ERROR
    batches = record_batch.split_batches(await _fetched(world))
    assert [h.base_offset for h, _raw in batches] == [0] * stored
    assert (await _offsets(world))[0] == (0, sum(h.record_count for h, _raw in batches))


async def test_a_good_batch_after_a_refused_one_gets_offset_zero_and_every_lookup_still_answers() -> None:
    world = _world()
    refused = await _produce(world, CASES["2^31-1 records claimed, one sent"].data)
    assert refused.error_code == ErrorCode.INVALID_RECORD
    assert (await _produce(world, make_batch([b"a", b"b"], [NOW - 10, NOW - 5]))).base_offset == 0
    assert await _offsets(world) == [(0, 2), (0, 0), (0, 1), (0, 0)]


async def test_a_record_more_than_an_hour_ahead_is_invalid_timestamp_with_a_record_error() -> None:
    world = _world()
    answer = await _produce(world, bad_batches.future_batch(NOW, 3_600_001))
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_TIMESTAMP, bad_batches.TIMESTAMP_REJECTED)
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
        (0, f"Timestamp {NOW + 3_600_001} of message with offset 0 is out of range. The timestamp should be within "
            f"[{NOW - (2**63 - 1)}, {NOW + 3_600_000}]")]
    assert (await _offsets(world))[0] == (0, 0)
    assert (await _produce(world, bad_batches.future_batch(NOW, 3_600_000))).error_code == ErrorCode.NONE


async def test_the_kafka_3_flavor_has_no_upper_bound_on_timestamps() -> None:
    world = _world(Flavor.KAFKA_3)
    assert (await _produce(world, bad_batches.future_batch(NOW, 10 * 3_600_000))).error_code == ErrorCode.NONE


async def test_a_log_append_time_topic_does_not_check_timestamps() -> None:
    world = _world()
    world.cluster.create_topic("t2", 1, configs={"message.timestamp.type": "LogAppendTime"})
    data = [PRODUCE_TOPIC(name="t2", partition_data=[PRODUCE_PARTITION(
        index=0, records=bad_batches.future_batch(NOW, 10 * 3_600_000))])]
    response = await call(world, PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=1000, topic_data=data)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_timestamps_of_a_batch_whose_records_do_not_parse_fall_back_to_the_batch() -> None:
    # Produce no longer stores such a batch, but a log may hold one from elsewhere: a lookup must not crash.
    raw = CASES["2^31-1 records claimed, one sent"].data
    assert record_batch.record_timestamps(record_batch.parse_header(raw), raw) is None
