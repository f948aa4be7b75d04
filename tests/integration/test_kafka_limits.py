"""Kafka's limits and validation, the same requests sent to the emulator and to a real broker (issue 17).

Every scenario runs against an emulator and against the real Kafka 4.4.0 broker (``kafka_broker_4``;
CreatePartitions also against 3.9.2) and the answers must be equal:

* defect 2: the KRaft controller's 10,000 bound on CreateTopics / CreatePartitions;
* defect 3: Produce of hand-built batches that break one rule each (``tests/support/bad_batches.py``),
  then ListOffsets on the same partition;
* defect 7: a null in a non-nullable field: the connection is closed without an answer;
* defect 10: a wildcard host cannot be advertised (emulator only: Kafka refuses it at start-up).
"""

from __future__ import annotations

import asyncio
import re
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection
from tests.support import bad_batches
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.broker]

CREATE_TOPICS, CREATE_PARTITIONS, PRODUCE, LIST_OFFSETS = 19, 37, 0, 2
_CT = codec.request_type(CREATE_TOPICS)
_CP = codec.request_type(CREATE_PARTITIONS)
_PR = codec.request_type(PRODUCE)
_LO = codec.request_type(LIST_OFFSETS)
Scenario = Callable[[RawConnection, str], Awaitable[list[Any]]]


async def _connect(host_port: str) -> RawConnection:
    host, port = host_port.rsplit(":", 1)
    return await RawConnection.open(host, int(port))


async def _on_both(broker: KafkaBroker, scenario: Scenario, flavor: Flavor = Flavor.KAFKA_4) -> tuple[Any, Any]:
    """The scenario's answers from a fresh emulator and from the broker, topic names made unique per run."""
    suffix = uuid.uuid4().hex[:8]
    async with EmulatorServer(EmulatorConfig(port=0, flavor=flavor)) as server:
        conn = await _connect(server.bootstrap_servers.split(",")[0])
        try:
            ours = await scenario(conn, suffix)
        finally:
            await conn.close()
    conn = await _connect(broker.bootstrap)
    try:
        theirs = await scenario(conn, suffix)
    finally:
        await conn.close()
    return ours, theirs


def _topic(name: str, partitions: int, configs: int = 0) -> Any:
    settings = [_CT.CreatableTopic.CreatableTopicConfig(name=n, value=v)
                for n, v in [("retention.ms", "1000"), ("cleanup.policy", "compact")][:configs]]
    return _CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                              configs=settings)


async def _create(conn: RawConnection, topics: list[Any], validate_only: bool, version: int = 7) -> list[Any]:
    response = await conn.request(CREATE_TOPICS, version, topics=topics, timeout_ms=30_000,
                                  validate_only=validate_only)
    return [(t.name, t.error_code, t.error_message, t.num_partitions) for t in response.topics]


async def _grow(conn: RawConnection, counts: list[tuple[str, int]], validate_only: bool) -> list[Any]:
    topics = [_CP.CreatePartitionsTopic(name=n, count=c, assignments=None) for n, c in counts]
    response = await conn.request(CREATE_PARTITIONS, 3, topics=topics, timeout_ms=30_000, validate_only=validate_only)
    return [(r.name, r.error_code, r.error_message) for r in response.results]


async def _create_topics_scenario(conn: RawConnection, s: str) -> list[Any]:
    await _create(conn, [_topic(f"exists-{s}", 1)], False)
    manual = _CT.CreatableTopic(name=f"m-{s}", num_partitions=-1, replication_factor=-1, configs=[], assignments=[
        _CT.CreatableTopic.CreatableReplicaAssignment(partition_index=i, broker_ids=[1]) for i in range(10_001)])
    requests = [
        ([_topic(f"big-{s}", 10_001)], False),
        ([_topic(f"big-{s}", 10_001)], True),
        ([_topic(f"huge-{s}", 2**31 - 1)], False),
        ([_topic(f"a-{s}", 6_000), _topic(f"x-{s}", 1), _topic("bad name!", 1), _topic(f"x-{s}", 1),
          _topic(f"exists-{s}", 1), _topic(f"minus-{s}", -1), _topic(f"zero-{s}", 0), _topic(f"b-{s}", 3_998)], True),
        ([manual], True),
        ([_topic(f"ten-k-{s}", 10_000)], True),
        ([_topic(f"one-{s}", 9_999)], True),
        ([_topic(f"cfg-{s}", 9_998, configs=1)], True),
        ([_topic(f"cfg-{s}", 9_998, configs=2)], True),
        ([_topic(f"c-{s}", 3), _topic(f"d-{s}", -1), _topic(f"e-{s}", 9_996)], True),
        ([_topic(f"exists-{s}", 1), _topic(f"n2-{s}", 9_999)], True),
    ]
    return [await _create(conn, topics, validate_only) for topics, validate_only in requests]


async def _create_partitions_scenario(conn: RawConnection, s: str) -> list[Any]:
    await _create(conn, [_topic(f"g-{s}", 2), _topic(f"h-{s}", 1)], False)
    g, h = f"g-{s}", f"h-{s}"
    requests = [
        ([(g, 10_003)], False),
        ([(g, 10_002)], True),
        ([(g, 2**31 - 1)], False),
        ([(g, 6_000), (h, 6_000)], True),
        ([(f"unknown-{s}", 20_000), (g, 1), (g, 6), (h, 10_002)], True),
    ]
    return [await _grow(conn, counts, validate_only) for counts, validate_only in requests]


async def test_create_topics_refuses_what_the_kraft_controller_refuses(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _on_both(kafka_broker_4, _create_topics_scenario)
    assert ours == theirs
    assert ours[0] == [(ours[0][0][0], ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per "
                                                                    "request.", -1)]


async def test_create_partitions_refuses_what_the_kraft_controller_refuses(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _on_both(kafka_broker_4, _create_partitions_scenario)
    assert ours == theirs
    assert ours[0][0][1:] == (ErrorCode.POLICY_VIOLATION, "Excessively large number of additional partitions per "
                                                          "request.")


async def test_create_partitions_of_the_kafka_3_flavor_answers_as_kafka_3_9(
        kafka_brokers: Any) -> None:
    broker = kafka_brokers.get("3")

    async def scenario(conn: RawConnection, s: str) -> list[Any]:
        await _create(conn, [_topic(f"g-{s}", 2), _topic(f"h-{s}", 1)], False)
        g, h = f"g-{s}", f"h-{s}"
        return [await _grow(conn, [(g, 10_003)], True), await _grow(conn, [(g, 6_000), (h, 6_000)], True),
                await _create(conn, [_topic(f"big-{s}", 10_001)], True),
                await _create(conn, [_topic(f"ten-k-{s}", 10_000)], True)]

    ours, theirs = await _on_both(broker, scenario, Flavor.KAFKA_3)
    assert ours == theirs


# -- Produce: record-level validation --------------------------------------------------------------

_RETRIABLE = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_FOR_PARTITION,
              ErrorCode.LEADER_NOT_AVAILABLE}


async def _produce(conn: RawConnection, topic: str, records: bytes) -> Any:
    data = [_PR.TopicProduceData(name=topic, partition_data=[
        _PR.TopicProduceData.PartitionProduceData(index=0, records=records)])]
    for _ in range(100):  # a new topic on the broker needs a moment for its leader
        response = await conn.request(PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=5_000,
                                      topic_data=data)
        part = response.responses[0].partition_responses[0]
        if part.error_code not in _RETRIABLE:
            return part
        await asyncio.sleep(0.05)
    raise AssertionError(f"{topic} never got a leader")


async def _list_offsets(conn: RawConnection, topic: str) -> list[tuple[int, int]]:
    answers = []
    for timestamp in (-1, -2, -3, 0):
        topics = [_LO.ListOffsetsTopic(name=topic, partitions=[_LO.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, timestamp=timestamp, current_leader_epoch=-1)])]
        response = await conn.request(LIST_OFFSETS, 9, replica_id=-1, isolation_level=0, topics=topics)
        part = response.topics[0].partitions[0]
        answers.append((part.error_code, part.offset))
    return answers


def _name(case: str, s: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", case).strip("-") + f"-{s}"


async def _produce_scenario(conn: RawConnection, s: str) -> dict[str, Any]:
    cases = bad_batches.cases()
    await _create(conn, [_topic(_name(case, s), 1) for case in cases], False)
    answers: dict[str, Any] = {}
    for case, expected in cases.items():
        part = await _produce(conn, _name(case, s), expected.data)
        errors = [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]
        answers[case] = (part.error_code, part.error_message, errors, part.base_offset,
                         await _list_offsets(conn, _name(case, s)))
    return answers


async def test_produce_validates_each_record_as_the_broker_does(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _on_both(kafka_broker_4, _produce_scenario)
    different = {case: (ours[case], theirs[case]) for case in ours if ours[case] != theirs[case]}
    assert not different, different
    for case, expected in bad_batches.cases().items():  # the table written down is the broker's
        assert theirs[case][:2] == (expected.code, expected.message), case


async def test_a_record_an_hour_and_a_second_ahead_is_invalid_timestamp_on_both(kafka_broker_4: KafkaBroker) -> None:
    async def scenario(conn: RawConnection, s: str) -> list[Any]:
        await _create(conn, [_topic(f"ts-{s}", 1)], False)
        answers = []
        for ahead_ms in (3_601_000, 3_540_000):
            part = await _produce(conn, f"ts-{s}", bad_batches.future_batch(int(time.time() * 1000), ahead_ms))
            # The window's ends depend on each broker's clock: compare the message with the numbers masked.
            errors = [(e.batch_index, re.sub(r"-?\d{6,}", "N", e.batch_index_error_message or ""))
                      for e in part.record_errors]
            answers.append((part.error_code, part.error_message, errors))
        return answers

    ours, theirs = await _on_both(kafka_broker_4, scenario)
    assert ours == theirs
    assert ours[0][0] == ErrorCode.INVALID_TIMESTAMP and ours[1][0] == ErrorCode.NONE


# -- a null where the schema forbids one -----------------------------------------------------------

def _null_requests() -> dict[str, bytes]:
    """Hand-built requests (header v1) with a null in a non-nullable field."""
    def header(api_key: int, version: int) -> bytes:
        return struct.pack(">hhih", api_key, version, 7, 3) + b"cli"

    join = (struct.pack(">h", -1) + struct.pack(">ii", 10_000, 30_000) + struct.pack(">h", 0)
            + struct.pack(">h", -1) + struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 0))
    return {
        "JoinGroup v5, null group id": header(11, 5) + join,
        "FindCoordinator v1, null key": header(10, 1) + struct.pack(">h", -1) + b"\x00",
        "Metadata v4, null topic name": header(3, 4) + struct.pack(">ih", 1, -1) + b"\x01",
        "Produce v3, null topic data": header(0, 3) + struct.pack(">hhii", -1, 1, 1000, -1),
    }


async def _null_scenario(conn: RawConnection, s: str) -> dict[str, str]:
    answers = {}
    host, port = conn.writer.get_extra_info("peername")[:2]
    for name, payload in _null_requests().items():
        probe = await RawConnection.open(host, port)
        await probe.send_raw(struct.pack(">i", len(payload)) + payload)
        answers[name] = "closed without an answer" if await probe.is_closed_by_peer(10) else "answered"
        await probe.close()
    return answers


async def test_a_null_in_a_non_nullable_field_closes_the_connection_on_both(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _on_both(kafka_broker_4, _null_scenario)
    assert ours == theirs == {name: "closed without an answer" for name in _null_requests()}


async def test_the_emulator_stays_up_after_refusing_a_null() -> None:
    async with EmulatorServer(EmulatorConfig(port=0)) as server:
        await _null_scenario(await _connect(server.bootstrap_servers), "x")
        conn = await _connect(server.bootstrap_servers)
        assert (await conn.request(18, 3)).error_code == 0  # ApiVersions still answered
        await conn.close()


# -- defect 10: a wildcard address is never advertised ----------------------------------------------

_REFUSAL = "advertised.listeners cannot use the nonroutable meta-address {}. Use a routable IP address"


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_wildcard_host_without_an_advertised_host_is_refused_by_every_entry_point(host: str) -> None:
    with pytest.raises(ValueError, match=re.escape(_REFUSAL.format(host))):
        EmulatorConfig(host=host)
    with pytest.raises(ValueError, match=re.escape(_REFUSAL.format(host))):
        Emulator(host=host)
    exe = Path(sys.executable).with_name("rebalance-lab")
    done = subprocess.run([str(exe), "serve", "--host", host, "--port", "0"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert _REFUSAL.format(host) in done.stderr and "--advertised-host" in done.stderr


async def test_a_wildcard_host_with_an_advertised_host_advertises_that_host() -> None:
    async with EmulatorServer(EmulatorConfig(host="0.0.0.0", port=0, advertised_host="127.0.0.1")) as server:
        conn = await _connect(server.bootstrap_servers)
        metadata = await conn.request(3, 12, topics=[], allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False)
        assert [b.host for b in metadata.brokers] == ["127.0.0.1"]
        await conn.close()
