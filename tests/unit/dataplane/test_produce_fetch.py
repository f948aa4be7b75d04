"""Produce, Fetch and ListOffsets handlers on an emulated cluster, without sockets."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.dataplane.batches import make_batch
from tests.unit.dataplane.harness import call, make_world, request_class

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
PRODUCE_TOPIC = request_class(PRODUCE, "TopicProduceData")
PRODUCE_PARTITION = request_class(PRODUCE, "PartitionProduceData")
FETCH_TOPIC = request_class(FETCH, "FetchTopic")
FETCH_PARTITION = request_class(FETCH, "FetchPartition")
FORGOTTEN = request_class(FETCH, "ForgottenTopic")
LIST_TOPIC = request_class(LIST_OFFSETS, "ListOffsetsTopic")
LIST_PARTITION = request_class(LIST_OFFSETS, "ListOffsetsPartition")


async def _produce(world: World, topic: str, partition: int, records: bytes, *, broker: int = 0,
                   version: int = 9, acks: int = -1) -> Any:
    data = [PRODUCE_TOPIC(name=topic, partition_data=[PRODUCE_PARTITION(index=partition, records=records)])]
    response = await call(world, PRODUCE, version, broker, transactional_id=None, acks=acks, timeout_ms=1000,
                          topic_data=data)
    return None if response is None else response.responses[0].partition_responses[0]


def _fetch_topics(topic: str | uuid.UUID, offsets: dict[int, int], max_bytes: int = 1 << 20) -> list[Any]:
    key = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"topic": topic}
    partitions = [FETCH_PARTITION(partition=p, fetch_offset=o, partition_max_bytes=max_bytes, log_start_offset=-1,
                                  current_leader_epoch=-1, last_fetched_epoch=-1) for p, o in offsets.items()]
    return [FETCH_TOPIC(partitions=partitions, **key)]


async def _fetch(world: World, topics: list[Any], *, version: int = 12, broker: int = 0, max_wait_ms: int = 0,
                 min_bytes: int = 1, max_bytes: int = 1 << 20, session_id: int = 0, session_epoch: int = -1,
                 forgotten: list[Any] | None = None) -> Any:
    return await call(world, FETCH, version, broker, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                      max_bytes=max_bytes, isolation_level=0, session_id=session_id, session_epoch=session_epoch,
                      topics=topics, forgotten_topics_data=forgotten or [], rack_id="")


def _parts(response: Any) -> dict[int, Any]:
    return {p.partition_index: p for t in response.responses for p in t.partitions}


# -- produce ------------------------------------------------------------------------


async def test_produce_appends_and_fetch_returns_the_batch_with_its_offset() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    await _produce(world, "t", 0, make_batch([b"a", b"b"]))
    second = await _produce(world, "t", 0, make_batch([b"c"]))
    assert (second.error_code, second.base_offset, second.log_start_offset) == (0, 2, 0)
    part = _parts(await _fetch(world, _fetch_topics("t", {0: 2})))[0]
    assert (part.error_code, part.high_watermark, part.last_stable_offset, part.log_start_offset) == (0, 3, 3, 0)
    assert record_batch.parse_header(part.records).base_offset == 2


async def test_acks_zero_has_no_response_but_appends() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    assert await _produce(world, "t", 0, make_batch([b"a"]), acks=0) is None
    assert _parts(await _fetch(world, _fetch_topics("t", {0: 0})))[0].high_watermark == 1


async def test_produce_never_auto_creates_a_topic() -> None:
    world = make_world()
    answer = await _produce(world, "missing", 0, make_batch([b"a"]))
    assert answer.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "missing" not in world.cluster.topics


@pytest.mark.parametrize(("acks", "expected"), [(2, ErrorCode.INVALID_REQUIRED_ACKS), (1, ErrorCode.NONE)])
async def test_acks_must_be_minus_one_zero_or_one(acks: int, expected: ErrorCode) -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    assert (await _produce(world, "t", 0, make_batch([b"a"]), acks=acks)).error_code == expected


async def test_a_corrupt_batch_is_corrupt_message() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    raw = bytearray(make_batch([b"a"]))
    raw[-1] ^= 1
    assert (await _produce(world, "t", 0, bytes(raw))).error_code == ErrorCode.CORRUPT_MESSAGE


async def test_produce_to_a_broker_that_does_not_lead_names_the_leader() -> None:
    world = make_world(brokers=3)
    world.cluster.create_topic("t", 1, 1)
    leader = world.cluster.topics["t"].partitions[0].leader_id
    other = (leader + 1) % 3
    response = await call(world, PRODUCE, 10, other, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
        PRODUCE_TOPIC(name="t", partition_data=[PRODUCE_PARTITION(index=0, records=make_batch([b"a"]))])])
    part = response.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NOT_LEADER_FOR_PARTITION
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, 0)
    assert [e.node_id for e in response.node_endpoints] == [leader]


# -- fetch ----------------------------------------------------------------------------


async def test_a_long_poll_is_woken_by_an_append() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    started = time.monotonic()
    waiting = asyncio.create_task(_fetch(world, _fetch_topics("t", {0: 0}), max_wait_ms=5000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await _produce(world, "t", 0, make_batch([b"a"]))
    part = _parts(await asyncio.wait_for(waiting, 2))[0]
    assert part.high_watermark == 1 and part.records and time.monotonic() - started < 2


async def test_a_long_poll_with_no_data_answers_empty_after_max_wait() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    started = time.monotonic()
    part = _parts(await _fetch(world, _fetch_topics("t", {0: 0}), max_wait_ms=100))[0]
    assert (part.error_code, part.records) == (0, b"") and time.monotonic() - started >= 0.09


async def test_a_fetch_waits_until_min_bytes_are_readable() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    one = make_batch([b"a"])
    waiting = asyncio.create_task(_fetch(world, _fetch_topics("t", {0: 0}), max_wait_ms=5000,
                                         min_bytes=len(one) + 1))
    await _produce(world, "t", 0, one)
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await _produce(world, "t", 0, make_batch([b"b"]))
    assert len(_parts(await asyncio.wait_for(waiting, 2))[0].records) > len(one)


async def test_an_offset_past_the_log_end_is_offset_out_of_range() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    part = _parts(await _fetch(world, _fetch_topics("t", {0: 5}), max_wait_ms=5000))[0]
    assert (part.error_code, part.high_watermark, part.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1)


async def test_fetch_v13_by_an_unknown_topic_id_is_unknown_topic_id() -> None:
    world = make_world()
    part = _parts(await _fetch(world, _fetch_topics(uuid.uuid4(), {0: 0}), version=13))[0]
    assert part.error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_fetch_v13_reads_by_topic_id() -> None:
    world = make_world()
    info = world.cluster.create_topic("t", 1)
    await _produce(world, "t", 0, make_batch([b"a"]))
    response = await _fetch(world, _fetch_topics(info.topic_id, {0: 0}), version=13)
    assert response.responses[0].topic_id == info.topic_id and _parts(response)[0].records


async def test_the_response_byte_limit_leaves_later_partitions_empty_but_returns_one_batch() -> None:
    world = make_world()
    world.cluster.create_topic("t", 2)
    for p in (0, 1):
        await _produce(world, "t", p, make_batch([b"x" * 200]))
    parts = _parts(await _fetch(world, _fetch_topics("t", {0: 0, 1: 0}), max_bytes=10))
    assert parts[0].records and parts[1].records == b""


async def test_fetch_from_a_follower_is_not_leader_with_the_leader_hint_in_v16() -> None:
    world = make_world(brokers=2)
    info = world.cluster.create_topic("t", 1, 2)
    follower = info.partitions[0].replicas[1]
    response = await _fetch(world, _fetch_topics(info.topic_id, {0: 0}), version=16, broker=follower)
    part = _parts(response)[0]
    assert part.error_code == ErrorCode.NOT_LEADER_FOR_PARTITION
    assert part.current_leader.leader_id == info.partitions[0].leader_id
    assert [e.node_id for e in response.node_endpoints] == [info.partitions[0].leader_id]


async def test_an_incremental_fetch_carries_only_partitions_with_news() -> None:
    world = make_world()
    world.cluster.create_topic("t", 2)
    full = await _fetch(world, _fetch_topics("t", {0: 0, 1: 0}), session_epoch=0)
    assert full.session_id > 0 and sorted(_parts(full)) == [0, 1]
    await _produce(world, "t", 1, make_batch([b"a"]))
    incremental = await _fetch(world, [], session_id=full.session_id, session_epoch=1)
    assert incremental.session_id == full.session_id and sorted(_parts(incremental)) == [1]
    quiet = await _fetch(world, _fetch_topics("t", {1: 1}), session_id=full.session_id, session_epoch=2)
    assert _parts(quiet) == {}


async def test_a_stale_session_epoch_is_a_whole_response_error() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    full = await _fetch(world, _fetch_topics("t", {0: 0}), session_epoch=0)
    stale = await _fetch(world, [], session_id=full.session_id, session_epoch=7)
    assert (stale.error_code, stale.session_id, stale.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])


# -- list offsets ---------------------------------------------------------------------


async def _list(world: World, timestamps: list[tuple[int, int]], version: int = 7, broker: int = 0) -> list[Any]:
    partitions = [LIST_PARTITION(partition_index=p, current_leader_epoch=-1, timestamp=ts) for p, ts in timestamps]
    response = await call(world, LIST_OFFSETS, version, broker, replica_id=-1, isolation_level=0,
                          topics=[LIST_TOPIC(name="t", partitions=partitions)])
    return list(response.topics[0].partitions)


async def test_list_offsets_answers_earliest_latest_timestamp_and_max_timestamp() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    await _produce(world, "t", 0, make_batch([b"a", b"b"], [100, 300]))
    await _produce(world, "t", 0, make_batch([b"c"], [200]))
    (latest,) = await _list(world, [(0, -1)])
    (earliest,) = await _list(world, [(0, -2)])
    (by_time,) = await _list(world, [(0, 150)])
    (max_ts,) = await _list(world, [(0, -3)])
    (none,) = await _list(world, [(0, 999)])
    assert (latest.timestamp, latest.offset, latest.leader_epoch) == (-1, 3, 0)
    assert (earliest.timestamp, earliest.offset) == (-1, 0)
    assert (by_time.timestamp, by_time.offset) == (300, 1)
    assert (max_ts.timestamp, max_ts.offset) == (300, 1)
    assert (none.error_code, none.timestamp, none.offset) == (0, -1, -1)


async def test_list_offsets_naming_a_partition_twice_gets_one_invalid_request_answer_on_kafka_4() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    answers = await _list(world, [(0, -1), (0, -2)])
    assert [(a.partition_index, a.error_code, a.offset) for a in answers] == [(0, ErrorCode.INVALID_REQUEST, -1)]


async def test_list_offsets_on_kafka_3_answers_every_entry_of_a_duplicated_partition() -> None:
    world = make_world(flavor=Flavor.KAFKA_3)
    world.cluster.create_topic("t", 1)
    answers = await _list(world, [(0, -1), (0, -2)])
    assert [a.error_code for a in answers] == [ErrorCode.INVALID_REQUEST] * 2


async def test_list_offsets_on_a_non_leader_is_not_leader() -> None:
    world = make_world(brokers=2)
    info = world.cluster.create_topic("t", 1, 1)
    other = 1 - info.partitions[0].leader_id
    (answer,) = await _list(world, [(0, -1)], broker=other)
    assert answer.error_code == ErrorCode.NOT_LEADER_FOR_PARTITION


async def test_clients_may_not_produce_to_an_internal_topic() -> None:
    world = make_world()
    world.cluster.ensure_offsets_topic()
    answer = await _produce(world, "__consumer_offsets", 0, make_batch([b"a"]))
    assert answer.error_code == ErrorCode.INVALID_TOPIC


async def test_unknown_partitions_carry_an_empty_aborted_list_and_read_errors_a_null_one() -> None:
    world = make_world()
    world.cluster.create_topic("t", 1)
    response = await _fetch(world, _fetch_topics("t", {0: 9}) + _fetch_topics("nope", {0: 0}))
    (out_of_range,), (unknown,) = (t.partitions for t in response.responses)
    assert (out_of_range.error_code, out_of_range.aborted_transactions) == (ErrorCode.OFFSET_OUT_OF_RANGE, None)
    assert (unknown.error_code, unknown.aborted_transactions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
