"""DescribeCluster and DescribeTopicPartitions: the same raw requests to the emulator and to Kafka 4.4.0.

Normalised: the cluster id, broker ids, hosts and ports (each side's own), topic ids (checked to be the
ids Metadata gives). DescribeTopicPartitions is compared on named topics only: an all-topics request
lists whatever else the session's broker holds (the emulator's paging of all topics is tested alone).
"""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.config import Flavor
from rebalance_lab.protocol import codec
from tests.admin.diff_support import assert_same, create_topic, on_both
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.broker]

METADATA, DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = 3, 60, 75
_DT = codec.request_type(DESCRIBE_TOPIC_PARTITIONS)


async def _describe_cluster(conn: RawConnection, version: int, endpoint_type: int = 1,
                            with_operations: bool = True) -> Any:
    fields: dict[str, Any] = {"include_cluster_authorized_operations": with_operations}
    if version >= 1:
        fields["endpoint_type"] = endpoint_type
    if version >= 2:
        fields["include_fenced_brokers"] = True
    r = await conn.request(DESCRIBE_CLUSTER, version, **fields)
    metadata = await conn.request(METADATA, 1, topics=[])
    ids = {b.node_id for b in metadata.brokers}
    brokers = [(b.broker_id in ids, (b.host, b.port) in {(m.host, m.port) for m in metadata.brokers}, b.rack,
                getattr(b, "is_fenced", None)) for b in r.brokers]
    return (r.error_code, r.error_message, getattr(r, "endpoint_type", None), bool(r.cluster_id),
            r.controller_id in ids if r.brokers else r.controller_id, brokers,
            sorted(r.authorized_operations) if r.authorized_operations else r.authorized_operations)


async def _cluster_scenario(conn: RawConnection, s: str, newest: int = 2) -> list[Any]:
    steps = [await _describe_cluster(conn, v) for v in range(newest + 1)]
    steps.append(await _describe_cluster(conn, 1, with_operations=False))
    steps.append(await _describe_cluster(conn, 1, endpoint_type=2))
    steps.append(await _describe_cluster(conn, newest, endpoint_type=5))
    return steps


async def _cluster_scenario_3(conn: RawConnection, s: str) -> list[Any]:
    return await _cluster_scenario(conn, s, newest=1)  # 3.9.2 serves DescribeCluster v0-1


async def _pages(conn: RawConnection, names: list[str], limit: int, cursor: tuple[str, int] | None = None) -> Any:
    at = None if cursor is None else _DT.Cursor(topic_name=cursor[0], partition_index=cursor[1])
    r = await conn.request(DESCRIBE_TOPIC_PARTITIONS, 0, topics=[_DT.TopicRequest(name=n) for n in names],
                           response_partition_limit=limit, cursor=at)
    metadata = await conn.request(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)
    ids = {t.name: t.topic_id for t in metadata.topics}
    topics = [(t.error_code, t.name, t.topic_id == ids.get(t.name) if t.topic_id else None, t.is_internal,
               [(p.error_code, p.partition_index, p.leader_epoch, len(p.replica_nodes), len(p.isr_nodes),
                 p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) for p in t.partitions],
               t.topic_authorized_operations) for t in r.topics]
    following = None if r.next_cursor is None else (r.next_cursor.topic_name, r.next_cursor.partition_index)
    return topics, following


async def _partitions_scenario(conn: RawConnection, s: str) -> list[Any]:
    a, b = f"dtp-a-{s}", f"dtp-b-{s}"
    await create_topic(conn, a, 3)
    await create_topic(conn, b, 2)
    return [
        await _pages(conn, [a, b, f"dtp-none-{s}", "bad name!"], 2000),
        await _pages(conn, [b, a], 2),
        await _pages(conn, [b, a], 2, (a, 2)),
        await _pages(conn, [a], 0),
        await _pages(conn, [a, b], 3, (a, 9)),
        await _pages(conn, [a], 3, (f"dtp-zzz-{s}", 0)),
        await _pages(conn, [a], 3, (a, -1)),
        await _pages(conn, [a, b], 3),
    ]


async def test_describe_cluster_answers_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _cluster_scenario))


async def test_describe_cluster_answers_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _cluster_scenario_3, Flavor.KAFKA_3))


async def test_describe_topic_partitions_pages_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _partitions_scenario, Flavor.KAFKA_3))


async def test_describe_topic_partitions_pages_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _partitions_scenario))


async def test_describe_topic_partitions_pages_through_every_topic_of_the_emulator() -> None:
    async with Emulator(topics=[("t1", 3), ("t2", 1), ("t3", 2)], port=0) as emu:
        host, port = emu.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await RawConnection.open(host, int(port))
        try:
            seen, cursor = [], None
            for _ in range(10):
                topics, cursor = await _pages(conn, [], 2, cursor)
                seen += [(t[1], p[1]) for t in topics for p in t[4]]
                if cursor is None:
                    break
        finally:
            await conn.close()
    assert seen == [("t1", 0), ("t1", 1), ("t1", 2), ("t2", 0), ("t3", 0), ("t3", 1)]
