"""OffsetCommit (8), v2-10 (spec/coordinator.md §12.1).

Order of checks as Kafka: the request-level topic/partition pre-checks of
``KafkaApis.handleOffsetCommitRequest`` first (a commit with nothing valid left
never reaches the coordinator, so it creates no group: trap §16.12), then the
group verdict, then the per-partition metadata size rule. The response keeps the
request's order (Java coordinator; §15 #9 lists Scala's hash-map order). A KIP-848
consumer group gives its verdict in :mod:`~rebalance_lab.coordinator.consumer_surface`
(spec/kip848.md §8.1, with 4.4.0's per-partition assignment epochs, KIP-1251).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.cluster import TopicInfo
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext, Stepped
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.coordinator.offsets import CommittedOffset
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 8
_TOPIC_IDS_FROM = 10  # v10 names topics by id (KIP-848 follow-up)


@dataclass
class _Partition:
    topic: str | None
    request: Any
    error: ErrorCode = ErrorCode.NONE
    early: bool = False  # failed KafkaApis' pre-checks (never seen by the coordinator)


def _resolve_topic(ctx: RequestContext, topic: Any) -> tuple[TopicInfo | None, ErrorCode]:
    cluster = ctx.world.cluster
    if ctx.api_version >= _TOPIC_IDS_FROM:
        info = cluster.topic_by_id(topic.topic_id)
        if info is not None and not authz.permits(ctx, authz.READ, authz.TOPIC, info.name):
            return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return info, ErrorCode.NONE if info else ErrorCode.UNKNOWN_TOPIC_ID
    if not authz.permits(ctx, authz.READ, authz.TOPIC, topic.name or ""):
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED  # KafkaApis: READ on the topic before the metadata check
    info = cluster.topics.get(topic.name)
    return info, ErrorCode.NONE if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _prechecked(ctx: RequestContext, request: Any) -> Generator[None, None, list[tuple[Any, list[_Partition]]]]:
    result = []
    pacer = Pacer()
    for topic in request.topics:
        yield from pacer.pause()
        info, error = _resolve_topic(ctx, topic)
        parts = []
        for p in topic.partitions:
            yield from pacer.pause()
            if info is not None and not 0 <= p.partition_index < len(info.partitions):
                parts.append(_Partition(info.name, p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, early=True))
            else:
                parts.append(_Partition(info.name if info else None, p, error, early=error is not ErrorCode.NONE))
        result.append((topic, parts))
    return result


# What to store, and the partitions whose metadata is over the limit (OFFSET_METADATA_TOO_LARGE).
Prepared = tuple[dict[tuple[str, int], CommittedOffset], list[_Partition]]


def _prepared(ctx: RequestContext, request: Any, checked: list[tuple[Any, list[_Partition]]]
              ) -> Generator[None, None, Prepared]:
    """The values to store, computed in steps before anything is stored."""
    now = ctx.world.now_ms()
    limit = ctx.world.config.group.offset_metadata_max_bytes
    retention = getattr(request, "retention_time_ms", -1) if 2 <= ctx.api_version <= 4 else -1
    values: dict[tuple[str, int], CommittedOffset] = {}
    too_large: list[_Partition] = []
    pacer = Pacer()
    for _topic, parts in checked:
        for part in parts:
            yield from pacer.pause()
            if part.error is not ErrorCode.NONE or part.topic is None:
                continue
            p = part.request
            metadata = p.committed_metadata or ""
            if len(metadata) > limit:
                too_large.append(part)
                continue
            epoch = getattr(p, "committed_leader_epoch", -1) if ctx.api_version >= 6 else -1
            expire = now + retention if retention != -1 else None
            values[(part.topic, p.partition_index)] = CommittedOffset(p.committed_offset, epoch, metadata, now, expire)
    return values, too_large


def _commit_all(ctx: RequestContext, request: Any, prepared: Prepared) -> None:
    """Stored in one go: the coordinator writes a commit's offsets as one atomic batch of records
    (OffsetMetadataManager.commitOffset), so no request sees half of it."""
    values, too_large = prepared
    for part in too_large:
        part.error = ErrorCode.OFFSET_METADATA_TOO_LARGE
    offsets_of(ctx.world).store.commit_all(request.group_id, values)


def _set_all(checked: list[tuple[Any, list[_Partition]]], error: ErrorCode) -> None:
    for _topic, parts in checked:
        for part in parts:
            if part.error is ErrorCode.NONE:
                part.error = error


def _checked_by_consumer_group(ctx: RequestContext, checked: list[tuple[Any, list[_Partition]]]
                                ) -> list[consumer_surface.CommittedPartition]:
    """The partitions a consumer group checks: pre-checks passed and metadata within the limit."""
    limit = ctx.world.config.group.offset_metadata_max_bytes
    topics = ctx.world.cluster.topics
    return [consumer_surface.CommittedPartition(part.topic, topics[part.topic].topic_id, part.request.partition_index)
            for _topic, parts in checked for part in parts
            if part.error is ErrorCode.NONE and part.topic is not None
            and len(part.request.committed_metadata or "") <= limit]


def _group_error(ctx: RequestContext, request: Any, checked: list[tuple[Any, list[_Partition]]]) -> ErrorCode:
    if not owns_group(ctx.world, ctx.broker.node_id, request.group_id):
        return ErrorCode.NOT_COORDINATOR
    instance = getattr(request, "group_instance_id", None) if ctx.api_version >= 7 else None
    if consumer_surface.holds(ctx.world, request.group_id):
        return consumer_surface.offset_commit_error(
            ctx.world, request.group_id, request.member_id, request.generation_id_or_member_epoch, instance,
            ctx.api_version, _checked_by_consumer_group(ctx, checked))
    return service_of(ctx.world).validate_offset_commit(
        request.group_id, request.member_id, request.generation_id_or_member_epoch, instance, ctx.api_version
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    authz.require_group(ctx, authz.READ, request.group_id or "")
    return answer(_answer(ctx, request), sum(len(t.partitions) for t in request.topics))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """Checked and prepared in steps; the group's check and the commit itself in one step, so the
    generation checked is the one committed against."""
    checked = yield from _prechecked(ctx, request)
    if any(part.error is ErrorCode.NONE for _t, parts in checked for part in parts):
        prepared = yield from _prepared(ctx, request, checked)
        error = _group_error(ctx, request, checked)
        if error is ErrorCode.NONE:
            _commit_all(ctx, request, prepared)
        else:
            _set_all(checked, error)
    yield
    ordered = _in_kafkas_order(ctx.api_version, checked)
    return (yield from _response_steps(ctx.api_version, ordered, lambda part: part.error))


def _in_kafkas_order(version: int, checked: list[tuple[Any, list[_Partition]]]) -> list[tuple[Any, list[_Partition]]]:
    """KafkaApis puts the pre-check failures in an ``OffsetCommitResponse.Builder`` and merges the
    coordinator's answer into it. Without a failure the coordinator's answer is the response (request
    order, a repeated topic repeated); otherwise each topic appears once (by name; by id from v10), in
    the order of its first failure and then of the request, its failed partitions first (checked on a
    real 4.4.0 broker)."""
    if not any(part.early for _topic, parts in checked for part in parts):
        return checked
    merged: dict[Any, tuple[Any, list[_Partition]]] = {}
    for early in (True, False):
        for topic, parts in checked:
            key = topic.topic_id if version >= _TOPIC_IDS_FROM else topic.name
            for part in parts:
                if part.early is early:
                    merged.setdefault(key, (topic, []))[1].append(part)
    return list(merged.values())


def _response(version: int, checked: list[tuple[Any, list[_Partition]]],
              error_of: Callable[[_Partition], ErrorCode]) -> Any:
    return Stepped(_response_steps(version, checked, error_of)).run()


def _response_steps(version: int, checked: list[tuple[Any, list[_Partition]]],
                    error_of: Callable[[_Partition], ErrorCode]) -> Generator[None, None, Any]:
    rt = codec.response_type(API_KEY)
    topic_cls = rt.OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    topics = []
    pacer = Pacer()
    for topic, parts in checked:
        fields: dict[str, Any] = {"topic_id": topic.topic_id} if version >= _TOPIC_IDS_FROM else {"name": topic.name}
        partitions = []
        for p in parts:
            yield from pacer.pause()
            partitions.append(part_cls(partition_index=p.request.partition_index, error_code=int(error_of(p))))
        topics.append(topic_cls(**fields, partitions=partitions))
    return codec.new_response(API_KEY, version, throttle_time_ms=0, topics=topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    """A whole-request error goes to every partition (``OffsetCommitRequest.getErrorResponse``)."""
    checked = [(t, [_Partition(None, p) for p in t.partitions]) for t in request.topics]
    return _response(api_version, checked, lambda _p: code)
