"""Metadata (3), v0-13: brokers, cluster id, controller, topics and partitions.

Follows ``KafkaApis.handleTopicMetadataRequest`` and ``KRaftMetadataCache`` (Kafka 3.x
KRaft and 4.x):

* which topics: v0 empty list = all; v1+ null = all, empty = none; v12+ may name
  topics by id (unknown id -> UNKNOWN_TOPIC_ID with a null name); v10-11 with a
  null name or a topic id -> INVALID_REQUEST for the whole request;
* auto-creation (``auto.create.topics.enable`` and, v4+, ``allow_auto_topic_creation``;
  never for an all-topics request): ``AutoTopicCreationManager`` answers a topic it
  has just asked the controller to create with UNKNOWN_TOPIC_OR_PARTITION, no
  partitions and a zero topic id - in KRaft mode. (ZooKeeper-mode brokers answered
  LEADER_NOT_AVAILABLE; every Kafka this emulates is KRaft.) Here creation
  completes at once, so the next Metadata shows the topic. An illegal name ->
  INVALID_TOPIC_EXCEPTION;
* brokers: only live (unfenced, up) brokers; a partition whose leader is not live
  has leader -1 and LEADER_NOT_AVAILABLE; replicas and ISR listing a down broker are
  kept (only v0 filtered them, with REPLICA_NOT_AVAILABLE) and it is listed in
  ``offline_replicas`` (v5+);
* controller id: in KRaft a random live broker; here the lowest live broker id
  (a deterministic choice, FIDELITY.md);
* authorized operations (v8+): with no authorizer every operation is allowed, so
  the bitfields hold all topic / cluster operations when asked, and
  ``Integer.MIN_VALUE`` (codec: None) otherwise.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.cluster import (
    PartitionInfo,
    TopicInfo,
    is_internal_topic,
    is_valid_topic_name,
)
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext, Stepped
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from rebalance_lab.security.acls import CLUSTER_NAME
from rebalance_lab.security.additional import advertised

API_KEY = 3
_RESPONSE = codec.response_type(API_KEY)
_BROKER = _RESPONSE.MetadataResponseBroker
_TOPIC = _RESPONSE.MetadataResponseTopic
_PARTITION = _TOPIC.MetadataResponsePartition
# AclOperation codes allowed on a topic / the cluster (Topic/Cluster resource supported operations).
_TOPIC_OPERATIONS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE/ALTER_CONFIGS
_ZERO_UUID = uuid.UUID(int=0)
# Topic entries (or, for all topics, partitions) per step (~1-5 ms): a request naming 250,000 topics is answered in
# steps of a few milliseconds (issue 17, defect 1), a usual one in a single step.
_STEP = 200


def _live_ids(world: World) -> set[int]:
    return {
        node_id for node_id, node in world.nodes.items() if node.up and node_id not in world.cluster.fenced
    }


def _requested(ctx: RequestContext, request: Any) -> list[Any] | None:
    """The request's topic entries, or None for "all topics"."""
    topics = request.topics
    if topics is None or (ctx.api_version == 0 and not topics):
        return None
    return list(topics)


def _check_version_rules(version: int, entries: list[Any]) -> None:
    for entry in entries:
        topic_id = getattr(entry, "topic_id", None)
        if version < 12 and entry.name is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Topic name can not be null for version {version}")
        if version < 12 and topic_id not in (None, _ZERO_UUID):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Topic IDs are not supported in requests for version {version}")


def _partition(p: PartitionInfo, live: set[int], version: int) -> Any:
    leader_live = p.leader_id in live
    error = ErrorCode.NONE if leader_live else ErrorCode.LEADER_NOT_AVAILABLE
    replicas, isr = list(p.replicas), list(p.isr)
    if version == 0 and leader_live and (any(r not in live for r in replicas)):
        error = ErrorCode.REPLICA_NOT_AVAILABLE  # errorUnavailableEndpoints is set only for v0
        replicas, isr = [r for r in replicas if r in live], [r for r in isr if r in live]
    return _PARTITION(
        error_code=error, partition_index=p.partition, leader_id=p.leader_id if leader_live else -1,
        leader_epoch=p.leader_epoch, replica_nodes=replicas, isr_nodes=isr,
        offline_replicas=[r for r in p.replicas if r not in live],
    )


def _topic(info: TopicInfo, live: set[int], version: int, with_ops: bool) -> Any:
    return _TOPIC(
        error_code=ErrorCode.NONE, name=info.name, topic_id=info.topic_id, is_internal=info.internal,
        partitions=[_partition(p, live, version) for p in info.partitions],
        authorized_operations=set(_TOPIC_OPERATIONS) if with_ops else None,
    )


def _missing(name: str | None, error: ErrorCode, topic_id: uuid.UUID | None = None) -> Any:
    internal = name is not None and is_internal_topic(name)
    return _TOPIC(error_code=error, name=name, topic_id=topic_id or _ZERO_UUID, is_internal=internal,
                  partitions=[], authorized_operations=None)


def _auto_create(ctx: RequestContext, request: Any) -> bool:
    wanted = ctx.api_version < 4 or bool(request.allow_auto_topic_creation)
    return wanted and ctx.world.config.auto_create_topics


def _unknown(ctx: RequestContext, name: str, create: bool) -> Any:
    if not is_valid_topic_name(name):
        return _missing(name, ErrorCode.INVALID_TOPIC)
    if not create:
        return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    try:
        ctx.world.cluster.create_topic(name)
    except KafkaError as exc:  # e.g. not enough live brokers for the default replication factor
        return _missing(name, exc.code)
    return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _named_topics(
    ctx: RequestContext, request: Any, entries: list[Any], with_ops: bool
) -> Generator[None, None, list[Any]]:
    cluster, live = ctx.world.cluster, _live_ids(ctx.world)
    create = _auto_create(ctx, request)
    result: list[Any] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if index and index % _STEP == 0:
            yield  # between two entries the world may change; each entry is answered from one state
        topic_id = getattr(entry, "topic_id", None)
        name = entry.name
        if name is None and topic_id not in (None, _ZERO_UUID):
            info = cluster.topic_by_id(topic_id)
            if info is None:
                result.append(_missing(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                continue
            name = info.name
        if name is None or name in seen:
            continue
        seen.add(name)
        info = cluster.topics.get(name)
        # KafkaApis: a topic the caller may not DESCRIBE, or may not auto-create (CREATE on the cluster or the
        # topic), is answered TOPIC_AUTHORIZATION_FAILED whether it exists or not, and is not created
        if not authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, name) or (
                info is None and create and is_valid_topic_name(name) and not authz.may_create_topic(ctx, name)):
            result.append(_missing(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        result.append(_topic(info, live, ctx.api_version, with_ops) if info else _unknown(ctx, name, create))
    return result


def _all_topics(ctx: RequestContext, with_ops: bool) -> Generator[None, None, list[Any]]:
    live, result, done = _live_ids(ctx.world), [], 0
    for info in list(ctx.world.cluster.topics.values()):
        if done >= _STEP:
            done = 0
            yield
        if not authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, info.name):
            continue  # KafkaApis leaves out of an all-topics answer what the caller may not DESCRIBE
        result.append(_topic(info, live, ctx.api_version, with_ops))
        done += 1 + len(info.partitions)
    return result


def _answer(ctx: RequestContext, request: Any, entries: list[Any] | None) -> Generator[None, None, Any]:
    with_ops = ctx.api_version >= 8 and bool(getattr(request, "include_topic_authorized_operations", False))
    if entries is None:
        topics = yield from _all_topics(ctx, with_ops)
    else:
        topics = yield from _named_topics(ctx, request, entries, with_ops)
    if with_ops and ctx.world.authorizer is not None:
        for topic in topics:
            if topic.error_code == ErrorCode.NONE:
                topic.authorized_operations = authz.operation_bits(ctx, authz.TOPIC, topic.name)
    return _response(ctx, request, topics)


def handle(ctx: RequestContext, request: Any) -> Any:
    entries = _requested(ctx, request)
    if entries is not None:
        _check_version_rules(ctx.api_version, entries)  # a whole-request error, before any work
    stepped = Stepped(_answer(ctx, request, entries))
    small = entries is not None and len(entries) <= _STEP
    return stepped.run() if small else stepped


def _response(ctx: RequestContext, request: Any, topics: list[Any]) -> Any:
    world, live = ctx.world, _live_ids(ctx.world)
    brokers = [
        _BROKER(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)  # the address on the request's listener
        for b in (advertised(world.services, ctx.listener, info) for info in world.cluster.live_brokers())
        if b.node_id in live
    ]
    cluster_ops = bool(getattr(request, "include_cluster_authorized_operations", False))
    return codec.new_response(
        API_KEY, ctx.api_version, throttle_time_ms=0, brokers=brokers, cluster_id=world.cluster.cluster_id,
        controller_id=min(live) if live else -1, topics=topics, error_code=ErrorCode.NONE,
        authorized_operations=authz.operation_bits(ctx, authz.CLUSTER, CLUSTER_NAME)
        if cluster_ops and 8 <= ctx.api_version <= 10 else None,
    )


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    """Kafka's ``MetadataRequest.getErrorResponse``: every requested topic with the error."""
    entries = request.topics or []
    topics = [_missing(e.name, code, getattr(e, "topic_id", None)) for e in entries]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics,
                              error_code=int(code) if api_version >= 13 else 0)
