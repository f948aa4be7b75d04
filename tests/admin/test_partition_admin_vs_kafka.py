"""ElectLeaders, partition reassignments, OffsetForLeaderEpoch, DescribeLogDirs and ListConfigResources: the
same raw requests to the emulator and to Kafka 4.4.0 and 3.9.2 (one broker on each side, so every election is
"not needed" and a reassignment can only keep the one replica; the multi-broker behaviour is shown on the
emulator alone, in test_partition_admin.py).

Normalised: the broker id, the file system's total and usable bytes, topics other than this run's.
"""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.protocol import codec
from tests.admin.diff_support import assert_same, create_topic, on_both
from tests.admin.test_delete_records_vs_kafka import produce
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.broker]

METADATA, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_LOG_DIRS, ELECT_LEADERS = 3, 23, 35, 43
ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, LIST_CONFIG_RESOURCES = 45, 46, 74
_EL = codec.request_type(ELECT_LEADERS)
_AR = codec.request_type(ALTER_REASSIGNMENTS)
_LR = codec.request_type(LIST_REASSIGNMENTS)
_OE = codec.request_type(OFFSET_FOR_LEADER_EPOCH)
_DL = codec.request_type(DESCRIBE_LOG_DIRS)


async def _node(conn: RawConnection) -> int:
    return int((await conn.request(METADATA, 1, topics=[])).brokers[0].node_id)


async def _elect(conn: RawConnection, version: int, wanted: list[tuple[str, list[int]]] | None,
                 election: int = 0) -> Any:
    fields: dict[str, Any] = {"timeout_ms": 5_000, "topic_partitions": None if wanted is None else [
        _EL.TopicPartitions(topic=t, partitions=ps) for t, ps in wanted]}
    if version >= 1:
        fields["election_type"] = election
    r = await conn.request(ELECT_LEADERS, version, **fields)
    return (getattr(r, "error_code", None), [(t.topic, [(p.partition_id, p.error_code, p.error_message)
                                                         for p in t.partition_result])
                                             for t in r.replica_election_results])


def _own(message: str | None, node: int) -> str | None:
    return None if message is None else message.replace(f"broker {node} ", "broker <id> ")


async def _reassign(conn: RawConnection, version: int, node: int, s: str) -> Any:
    shape = _AR.ReassignableTopic.ReassignablePartition
    topics = [_AR.ReassignableTopic(name=f"pa-{s}", partitions=[
        shape(partition_index=0, replicas=[node]), shape(partition_index=1, replicas=[node, 99]),
        shape(partition_index=1, replicas=None), shape(partition_index=9, replicas=[node]),
        shape(partition_index=0, replicas=[]), shape(partition_index=0, replicas=[node, node])]),
        _AR.ReassignableTopic(name=f"pa-none-{s}", partitions=[shape(partition_index=0, replicas=[node])])]
    fields: dict[str, Any] = {"timeout_ms": 5_000, "topics": topics}
    if version >= 1:
        fields["allow_replication_factor_change"] = True
    r = await conn.request(ALTER_REASSIGNMENTS, version, **fields)
    return (r.error_code, r.error_message, getattr(r, "allow_replication_factor_change", None),
            [(t.name, [(p.partition_index, p.error_code, _own(p.error_message, node)) for p in t.partitions])
             for t in r.responses])


async def _list_reassignments(conn: RawConnection, s: str) -> Any:
    named = [_LR.ListPartitionReassignmentsTopics(name=f"pa-{s}", partition_indexes=[0, 7]),
             _LR.ListPartitionReassignmentsTopics(name=f"pa-none-{s}", partition_indexes=[0])]
    answers = []
    for topics in (None, named):
        r = await conn.request(LIST_REASSIGNMENTS, 0, timeout_ms=5_000, topics=topics)
        answers.append((r.error_code, r.error_message, [t.name for t in r.topics]))
    return answers


async def _epochs(conn: RawConnection, version: int, s: str, asks: list[tuple[str, int, int, int]]) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, current, epoch in asks:
        by_topic.setdefault(topic, []).append(_OE.OffsetForLeaderTopic.OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current, leader_epoch=epoch))
    fields: dict[str, Any] = {"topics": [_OE.OffsetForLeaderTopic(topic=t, partitions=ps)
                                         for t, ps in by_topic.items()]}
    if version >= 3:
        fields["replica_id"] = -1
    r = await conn.request(OFFSET_FOR_LEADER_EPOCH, version, **fields)
    return [(t.topic, [(p.partition, p.error_code, p.leader_epoch, p.end_offset) for p in t.partitions])
            for t in r.topics]


async def _log_dirs(conn: RawConnection, version: int, s: str, named: bool) -> Any:
    topics = [_DL.DescribableLogDirTopic(topic=f"pa-{s}", partitions=[0, 1, 8]),
              _DL.DescribableLogDirTopic(topic=f"pa-none-{s}", partitions=[0])] if named else None
    r = await conn.request(DESCRIBE_LOG_DIRS, version, topics=topics)
    return (getattr(r, "error_code", None), [
        (d.error_code, d.log_dir, sorted((t.name, sorted((p.partition_index, p.partition_size, p.offset_lag,
                                                          p.is_future_key) for p in t.partitions))
                                         for t in d.topics if t.name.endswith(s)),
         getattr(d, "total_bytes", 0) > 0, getattr(d, "usable_bytes", 0) > 0) for d in r.results])


async def _config_resources(conn: RawConnection, version: int, node: int, s: str, types: list[int]) -> Any:
    fields: dict[str, Any] = {"resource_types": types} if version >= 1 else {}
    r = await conn.request(LIST_CONFIG_RESOURCES, version, **fields)
    mine = [(c.resource_type, "<id>" if c.resource_name == str(node) else c.resource_name)
            for c in r.config_resources if c.resource_type != 2 or c.resource_name.endswith(s)]
    return r.error_code, sorted(mine)


async def _scenario(conn: RawConnection, s: str, kafka_3: bool = False) -> list[Any]:
    """kafka_3: the versions 3.9.2 serves (AlterPartitionReassignments v0, DescribeLogDirs v1-4,
    ListConfigResources v0 as ListClientMetricsResources)."""
    node, topic = await _node(conn), f"pa-{s}"
    await create_topic(conn, topic, 2)
    for count in (3, 2):
        await produce(conn, topic, 0, count)
    steps: list[Any] = [await _elect(conn, v, [(topic, [0, 1, 5]), (f"pa-none-{s}", [0])]) for v in (0, 1, 2)]
    steps.append(await _elect(conn, 2, [(topic, [0])], election=1))
    steps.append(await _elect(conn, 2, [(topic, [0])], election=3))
    steps += [await _reassign(conn, v, node, s) for v in ((0,) if kafka_3 else (0, 1))]
    steps.append(await _list_reassignments(conn, s))
    asks = [(topic, 0, -1, 0), (topic, 1, 5, 0), (topic, 7, -1, 0), (f"pa-none-{s}", 0, -1, 0), (topic, 0, 0, 3),
            (topic, 1, 0, -1)]
    steps += [await _epochs(conn, v, s, asks) for v in (2, 3, 4)]
    steps += [await _log_dirs(conn, v, s, named=True) for v in ((1, 2, 3, 4) if kafka_3 else (1, 2, 3, 4, 5))]
    steps.append(await _log_dirs(conn, 4, s, named=False))
    steps.append(await _config_resources(conn, 0, node, s, []))
    for types in ([] if kafka_3 else ([4, 8], [2], [], [7])):
        steps.append(await _config_resources(conn, 1, node, s, types))
    return steps


async def _scenario_3(conn: RawConnection, s: str) -> list[Any]:
    return await _scenario(conn, s, kafka_3=True)


async def test_partition_admin_apis_answer_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _scenario))


async def test_partition_admin_apis_answer_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _scenario_3, Flavor.KAFKA_3))
