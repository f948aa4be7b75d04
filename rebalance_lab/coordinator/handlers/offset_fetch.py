"""OffsetFetch (9), v1-7 for one group and the batched v8+ (spec/coordinator.md §12.2).

An unknown or Dead group is no error: each requested partition answers -1/-1/""
and "all topics" answers an empty list. Where a group-level error goes depends on
the version: into every partition (v<2), the top-level ErrorCode (v2-7), or the
group's ErrorCode (v8+). Member id and epoch (v9+) are ignored for classic groups; a KIP-848
consumer group checks them (spec/kip848.md §8.2, strict epoch equality) and a failed check is the
group's error with no topics.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.ordering import java_hashmap_order
from rebalance_lab.coordinator.group_service import owns_group
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.coordinator.offsets import NO_EPOCH, NO_OFFSET, CommittedOffset
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 9
_BATCHED_FROM = 8
_TOPIC_IDS_FROM = 10
_TOP_LEVEL_ERROR_FROM = 2
_MEMBER_FROM = 9  # MemberId/MemberEpoch (KIP-848)


@dataclass(frozen=True)
class _Entry:
    partition: int
    value: CommittedOffset | None
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True)
class _TopicResult:
    name: str
    topic_id: Any
    entries: list[_Entry]


def _topic_key(ctx: RequestContext, topic: Any) -> tuple[str, Any]:
    if ctx.api_version >= _TOPIC_IDS_FROM:
        info = ctx.world.cluster.topic_by_id(topic.topic_id)
        return (info.name if info else ""), topic.topic_id
    info = ctx.world.cluster.topics.get(topic.name)
    return topic.name, (info.topic_id if info else None)


def _requested(ctx: RequestContext, group_id: str, topics: list[Any], indexes_field: str,
               stable: bool = False) -> Generator[None, None, list[_TopicResult]]:
    # The group's offsets as they are now (one C-speed copy), read in steps: Kafka answers from one
    # snapshot of the group (OffsetMetadataManager.fetchOffsets at the last committed offset).
    committed = dict(offsets_of(ctx.world).store.fetch_all(group_id))
    pending = offsets_of(ctx.world).pending
    results = []
    pacer = Pacer()
    for topic in topics:
        yield from pacer.pause()
        name, topic_id = _topic_key(ctx, topic)
        if not authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, name):  # KafkaApis: DESCRIBE on each topic
            entries = [_Entry(p, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in getattr(topic, indexes_field)]
            results.append(_TopicResult(name, topic_id, entries))
            continue
        # RequireStable (KIP-447): an offset pending in a transaction -> UNSTABLE_OFFSET_COMMIT (OMM.fetchOffsets)
        unstable = ErrorCode.UNSTABLE_OFFSET_COMMIT
        entries = []
        for p in getattr(topic, indexes_field):
            yield from pacer.pause()
            entries.append(_Entry(p, None, unstable) if stable and pending.has_pending(group_id, name, p)
                           else _Entry(p, committed.get((name, p))))
        results.append(_TopicResult(name, topic_id, entries))
    return results


def _all(ctx: RequestContext, group_id: str) -> list[_TopicResult]:
    """Every committed offset, in the Java coordinator's hash-map order: topics as a
    ``HashMap<String, ...>`` filled in first-commit order, partitions as ``HashMap<Integer, ...>``."""
    by_topic: dict[str, list[tuple[int, CommittedOffset]]] = {}
    for (topic, partition), value in offsets_of(ctx.world).store.fetch_all(group_id):
        by_topic.setdefault(topic, []).append((partition, value))
    results = []
    hidden = authz.denied(ctx, authz.DESCRIBE, authz.TOPIC, by_topic)  # KafkaApis leaves them out
    for topic in java_hashmap_order(by_topic):
        if topic in hidden:
            continue
        info = ctx.world.cluster.topics.get(topic)
        parts = _integer_hashmap_order(by_topic[topic])
        results.append(_TopicResult(topic, info.topic_id if info else None, [_Entry(p, v) for p, v in parts]))
    return results


def _integer_hashmap_order(items: list[tuple[int, CommittedOffset]]) -> list[tuple[int, CommittedOffset]]:
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2
    # Integer.hashCode is the value; spread leaves values below 65536 unchanged.
    return sorted(items, key=lambda kv: (kv[0] ^ (kv[0] >> 16)) & (capacity - 1))


def _fetch_group(ctx: RequestContext, group_id: str, topics: list[Any] | None, indexes_field: str,
                 member: tuple[str | None, int] = (None, -1), stable: bool = False
                 ) -> Generator[None, None, tuple[ErrorCode, list[_TopicResult]]]:
    if not authz.permits(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if not owns_group(ctx.world, ctx.broker.node_id, group_id):
        return ErrorCode.NOT_COORDINATOR, []
    if consumer_surface.holds(ctx.world, group_id):
        error = consumer_surface.offset_fetch_error(ctx.world, group_id, *member)
        if error is not ErrorCode.NONE:
            return error, []
    if topics is None:
        return ErrorCode.NONE, _all(ctx, group_id)
    return ErrorCode.NONE, (yield from _requested(ctx, group_id, topics, indexes_field, stable))


def _partition(cls: Any, entry: _Entry, error: ErrorCode) -> Any:
    value = entry.value
    return cls(
        partition_index=entry.partition,
        committed_offset=value.offset if value and error is ErrorCode.NONE else NO_OFFSET,
        committed_leader_epoch=value.leader_epoch if value and error is ErrorCode.NONE else NO_EPOCH,
        metadata=value.metadata if value and error is ErrorCode.NONE else "",
        error_code=int(error if error is not ErrorCode.NONE else entry.error),
    )


def _topics(topic_cls: Any, version: int, results: list[_TopicResult], partition_error: ErrorCode
            ) -> Generator[None, None, list[Any]]:
    part_cls = next(getattr(topic_cls, a) for a in dir(topic_cls) if a.startswith("OffsetFetchResponsePartition"))
    topics = []
    pacer = Pacer()
    for result in results:
        key: dict[str, Any] = {"topic_id": result.topic_id} if version >= _TOPIC_IDS_FROM else {"name": result.name}
        partitions = []
        for entry in result.entries:
            yield from pacer.pause()
            partitions.append(_partition(part_cls, entry, partition_error))
        topics.append(topic_cls(**key, partitions=partitions))
    return topics


def _single(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    version = ctx.api_version
    stable = bool(getattr(request, "require_stable", False))
    error, results = yield from _fetch_group(ctx, request.group_id, request.topics, "partition_indexes",
                                             stable=stable)
    unauthorized = error is ErrorCode.GROUP_AUTHORIZATION_FAILED and version >= _TOP_LEVEL_ERROR_FROM
    if error is not ErrorCode.NONE and request.topics is not None and not unauthorized:
        results = _requested_without_values(request.topics)  # v2-7 answer an unauthorized group with no topic
    topic_cls = codec.response_type(API_KEY).OffsetFetchResponseTopic
    per_partition = error if version < _TOP_LEVEL_ERROR_FROM else ErrorCode.NONE
    return codec.new_response(API_KEY, version, throttle_time_ms=0, error_code=int(error),
                              topics=(yield from _topics(topic_cls, version, results, per_partition)))


def _requested_without_values(topics: list[Any]) -> list[_TopicResult]:
    return [_TopicResult(t.name, None, [_Entry(p, None) for p in t.partition_indexes]) for t in topics]


def _batched(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    group_cls = codec.response_type(API_KEY).OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    groups = []
    for group in request.groups:
        member = (group.member_id, group.member_epoch) if ctx.api_version >= _MEMBER_FROM else (None, -1)
        yield  # each group is read from one state
        error, results = yield from _fetch_group(ctx, group.group_id, group.topics, "partition_indexes", member,
                                      bool(getattr(request, "require_stable", False)))
        groups.append(group_cls(group_id=group.group_id, error_code=int(error),
                                topics=(yield from _topics(topic_cls, ctx.api_version, results, ErrorCode.NONE))))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, groups=groups)


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= _BATCHED_FROM:
        groups = request.groups or []
        return answer(_batched(ctx, request), sum(1 + len(_partitions(g.topics)) for g in groups))
    return answer(_single(ctx, request), len(_partitions(request.topics)))


def _partitions(topics: list[Any] | None) -> list[int]:
    return [p for t in topics or () for p in t.partition_indexes]
