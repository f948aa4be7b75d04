"""The admin APIs under ACLs (``--acl-file``), as KafkaApis/ControllerApis check them: DESCRIBE_CONFIGS /
ALTER_CONFIGS on the topic or the cluster, DELETE on the topic for DeleteRecords, ALTER on the cluster for
elections and reassignments, DESCRIBE on the cluster for log dirs, DESCRIBE on topics elsewhere.
User:ANONYMOUS may do everything on topic "open" and nothing on "closed" or the cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode as E
from tests.integration.wire import RawConnection
from tests.security.acl_support import acl_emulator

ACLS = [{"principal": "User:ANONYMOUS", "operation": "ALL", "resource_type": "TOPIC", "resource_name": "open"},
        {"principal": "User:bob", "operation": "ALL", "resource_type": "CLUSTER", "resource_name": "kafka-cluster"}]
_DC, _IA, _DR = codec.request_type(32), codec.request_type(44), codec.request_type(21)
_DT, _OE, _EL = codec.request_type(75), codec.request_type(23), codec.request_type(43)


async def _configs(conn: RawConnection) -> list[Any]:
    resources = [_DC.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=["retention.ms"])
                 for t, n in [(2, "open"), (2, "closed"), (4, "0")]]
    described = await conn.request(32, 4, resources=resources, include_synonyms=False, include_documentation=False)
    shape = _IA.AlterConfigsResource
    altered = await conn.request(44, 1, validate_only=False, resources=[
        shape(resource_type=t, resource_name=n, configs=[shape.AlterableConfig(name=k, config_operation=0, value="1")])
        for t, n, k in [(2, "open", "retention.ms"), (2, "closed", "retention.ms"), (4, "0", "log.cleaner.threads")]])
    return [[(r.resource_name, r.error_code, r.error_message, len(r.configs)) for r in described.results],
            [(r.resource_name, r.error_code, r.error_message) for r in altered.responses]]


async def _partitions(conn: RawConnection) -> list[Any]:
    deleted = await conn.request(21, 2, timeout_ms=1_000, topics=[
        _DR.DeleteRecordsTopic(name=n, partitions=[_DR.DeleteRecordsTopic.DeleteRecordsPartition(
            partition_index=0, offset=0)]) for n in ("open", "closed")])
    pages = await conn.request(75, 0, topics=[_DT.TopicRequest(name=n) for n in ("closed", "open")],
                               response_partition_limit=10, cursor=None)
    epochs = await conn.request(23, 4, replica_id=-1, topics=[_OE.OffsetForLeaderTopic(topic=n, partitions=[
        _OE.OffsetForLeaderTopic.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])
        for n in ("open", "closed")])
    return [[(t.name, t.partitions[0].error_code) for t in deleted.topics],
            [(t.name, t.error_code) for t in pages.topics],
            [(t.topic, t.partitions[0].error_code) for t in epochs.topics]]


async def _cluster(conn: RawConnection) -> list[Any]:
    elected = await conn.request(43, 2, election_type=0, timeout_ms=1_000,
                                 topic_partitions=[_EL.TopicPartitions(topic="open", partitions=[0])])
    reassigned = await conn.request(45, 0, timeout_ms=1_000, topics=[])
    listed = await conn.request(46, 0, timeout_ms=1_000, topics=None)
    dirs = await conn.request(35, 4, topics=None)
    resources = await conn.request(74, 1, resource_types=[])
    return [(elected.error_code, elected.replica_election_results[0].partition_result[0].error_code),
            reassigned.error_code, listed.error_code, (dirs.error_code, len(dirs.results)), resources.error_code]


async def test_admin_apis_refuse_what_the_acls_do_not_allow(tmp_path: Path) -> None:
    async with acl_emulator(tmp_path, ACLS, topics=(("open", 1), ("closed", 1))) as conn:
        configs, partitions, cluster = await _configs(conn), await _partitions(conn), await _cluster(conn)
    assert configs == [
        [("open", E.NONE, "", 1), ("closed", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.", 0),
         ("0", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", 0)],
        [("open", E.NONE, None), ("closed", E.TOPIC_AUTHORIZATION_FAILED, None),
         ("0", E.CLUSTER_AUTHORIZATION_FAILED, None)]]
    assert partitions == [
        [("open", E.NONE), ("closed", E.TOPIC_AUTHORIZATION_FAILED)],
        [("open", E.NONE), ("closed", E.TOPIC_AUTHORIZATION_FAILED)],
        [("open", E.NONE), ("closed", E.TOPIC_AUTHORIZATION_FAILED)]]
    denied = E.CLUSTER_AUTHORIZATION_FAILED
    assert cluster == [(denied, denied), denied, denied, (denied, 0), denied]
