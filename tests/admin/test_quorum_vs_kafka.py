"""DescribeQuorum (55) and AlterReplicaLogDirs (34): the same raw requests to the emulator and to Kafka 4.4.0
and 3.9.2 (single-node KRaft, combined mode), answers compared field by field.

Normalised: the quorum's offsets (the metadata log's length differs; checked positive and equal between
the leader's end offset and the high watermark), timestamps (checked to be the answering side's recent wall
clock), the leader and node ids (checked to be the controller DescribeCluster names) and the controller
listener's address; AlterReplicaLogDirs' topic and partition order (the broker groups through hash maps). Authorization
and a partition held by another broker are checked on the emulator alone (3 brokers, ACLs).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode as E
from tests.admin.diff_support import assert_same, connect, create_topic, on_both
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

DESCRIBE_QUORUM, ALTER_REPLICA_LOG_DIRS, DESCRIBE_CLUSTER, DESCRIBE_LOG_DIRS = 55, 34, 60, 35
_DQ, _AR = codec.request_type(DESCRIBE_QUORUM), codec.request_type(ALTER_REPLICA_LOG_DIRS)
METADATA_TOPIC = "__cluster_metadata"
LOG_DIR = "/tmp/kraft-combined-logs"


def _recent(ms: int) -> bool:
    return abs(ms - time.time() * 1000) < 120_000


async def _quorum(conn: RawConnection, version: int, wanted: list[tuple[str, list[int]]]) -> Any:
    topics = [_DQ.TopicData(topic_name=t, partitions=[_DQ.TopicData.PartitionData(partition_index=p) for p in ps])
              for t, ps in wanted]
    r = await conn.request(DESCRIBE_QUORUM, version, topics=topics)
    controller = (await conn.request(DESCRIBE_CLUSTER, 0, include_cluster_authorized_operations=False)).controller_id

    def replica(s: Any, hw: int) -> Any:
        stamps = [getattr(s, f, None) for f in ("last_fetch_timestamp", "last_caught_up_timestamp")]
        return (s.replica_id == controller, s.log_end_offset == hw,
                [x if x is None or x < 0 else _recent(x) for x in stamps], getattr(s, "replica_directory_id", None))

    parts = [[(p.partition_index, p.error_code, getattr(p, "error_message", None),
               p.leader_id == controller if p.error_code == 0 else p.leader_id, p.leader_epoch,
               p.high_watermark > 0 if p.error_code == 0 else p.high_watermark,
               [replica(s, p.high_watermark) for s in p.current_voters],
               [replica(s, p.high_watermark) for s in p.observers]) for p in t.partitions] for t in r.topics]
    nodes = [(n.node_id == controller, [(x.name, bool(x.host), x.port > 0) for x in n.listeners])
             for n in getattr(r, "nodes", [])]
    return (r.error_code, getattr(r, "error_message", None), [t.topic_name for t in r.topics], parts, nodes)


async def _quorum_scenario(conn: RawConnection, s: str) -> list[Any]:
    steps = []
    for version in range(3):
        steps.append(await _quorum(conn, version, [(METADATA_TOPIC, [0])]))
        steps.append(await _quorum(conn, version, [(METADATA_TOPIC, [1])]))
        steps.append(await _quorum(conn, version, [(f"other-{s}", [0])]))
    steps.append(await _quorum(conn, 2, []))
    steps.append(await _quorum(conn, 2, [(METADATA_TOPIC, [0, 1])]))
    steps.append(await _quorum(conn, 2, [(METADATA_TOPIC, [0]), (f"other-{s}", [0])]))
    return steps


async def _alter(conn: RawConnection, version: int, dirs: list[tuple[str, list[tuple[str, list[int]]]]]) -> Any:
    shape = _AR.AlterReplicaLogDir
    r = await conn.request(ALTER_REPLICA_LOG_DIRS, version, dirs=[shape(path=path, topics=[
        shape.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics]) for path, topics in dirs])
    return sorted((t.topic_name, sorted((p.partition_index, p.error_code) for p in t.partitions)) for t in r.results)


async def _alter_scenario(conn: RawConnection, s: str) -> list[Any]:
    topic, missing, long_name = f"ard-{s}", f"ard-none-{s}", "x" * 230
    await create_topic(conn, topic, 2)
    mixed = [(topic, [0, 1, 7]), (missing, [0]), (long_name, [0])]
    steps = []
    for version in (1, 2):
        for path in (LOG_DIR, LOG_DIR + "/", "/nope", "relative"):
            steps.append(await _alter(conn, version, [(path, mixed)]))
    steps.append(await _alter(conn, 2, []))
    steps.append(await _alter(conn, 2, [(LOG_DIR, [(topic, [0])]), ("/nope", [(topic, [0, 1])])]))
    described = await conn.request(DESCRIBE_LOG_DIRS, 1, topics=None)
    steps.append([r.log_dir for r in described.results])
    return steps


@pytest.mark.broker
async def test_describe_quorum_answers_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _quorum_scenario))


@pytest.mark.broker
async def test_describe_quorum_answers_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _quorum_scenario, Flavor.KAFKA_3))


@pytest.mark.broker
async def test_alter_replica_log_dirs_answers_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _alter_scenario))


@pytest.mark.broker
async def test_alter_replica_log_dirs_answers_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _alter_scenario, Flavor.KAFKA_3))


async def test_the_quorum_is_the_controller_with_the_other_brokers_observing() -> None:
    async with EmulatorServer(EmulatorConfig(port=0, brokers=3)) as server:
        answers = []
        for address in server.bootstrap_servers.split(","):  # any broker forwards to the controller
            conn = await connect(address)
            try:
                answers.append(await conn.request(DESCRIBE_QUORUM, 2, topics=[_DQ.TopicData(
                    topic_name=METADATA_TOPIC, partitions=[_DQ.TopicData.PartitionData(partition_index=0)])]))
            finally:
                await conn.close()
    for r in answers:
        p = r.topics[0].partitions[0]
        assert (p.leader_id, [v.replica_id for v in p.current_voters], [o.replica_id for o in p.observers]) == \
            (0, [0], [1, 2])
        assert [n.node_id for n in r.nodes] == [0]
    assert len({r.topics[0].partitions[0].high_watermark for r in answers}) == 1


async def test_a_replica_on_another_broker_is_not_leader_or_follower_there() -> None:
    async with EmulatorServer(EmulatorConfig(port=0, brokers=3, topics=(("spread", 3),))) as server:
        conn = await connect(server.bootstrap_servers.split(",")[0])
        try:
            metadata = await conn.request(3, 1, topics=None)
            answer = await _alter(conn, 2, [(LOG_DIR, [("spread", [0, 1, 2])])])
        finally:
            await conn.close()
    replicas = {p.partition_index: p.replica_nodes for t in metadata.topics for p in t.partitions}
    expected = [(i, E.NONE if 0 in replicas[i] else E.NOT_LEADER_FOR_PARTITION) for i in range(3)]
    assert answer == [("spread", expected)]
    assert {code for _, code in expected} == {E.NONE, E.NOT_LEADER_FOR_PARTITION}


async def test_both_apis_refuse_a_principal_without_cluster_rights(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"acls": [
        {"principal": "User:ANONYMOUS", "operation": "ALL", "resource_type": "TOPIC", "resource_name": "open"}]}))
    async with EmulatorServer(EmulatorConfig(port=0, acl_file=str(path), topics=(("open", 1),))) as server:
        conn = await connect(server.bootstrap_servers)
        try:
            quorum = await conn.request(DESCRIBE_QUORUM, 2, topics=[_DQ.TopicData(
                topic_name=METADATA_TOPIC, partitions=[_DQ.TopicData.PartitionData(partition_index=0)])])
            altered = await _alter(conn, 2, [(LOG_DIR, [("open", [0]), ("nope", [3])])])
        finally:
            await conn.close()
    assert (quorum.error_code, quorum.error_message, quorum.topics, quorum.nodes) == \
        (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [], [])
    denied = E.CLUSTER_AUTHORIZATION_FAILED
    assert altered == [("nope", [(3, denied)]), ("open", [(0, denied)])]
