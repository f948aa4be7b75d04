"""OffsetDelete (47) (spec/coordinator.md §12.3).

A KIP-848 consumer group has no state check (``ConsumerGroup.validateOffsetDelete`` does
nothing): only the topics its members subscribe to are refused, GROUP_SUBSCRIBED_TO_TOPIC per
partition (spec/kip848.md §8.3).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.offsets_gate import OffsetDeleteCheck
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, released
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 47
_TOPIC = codec.response_type(API_KEY).OffsetDeleteResponseTopic
_PARTITION = _TOPIC.OffsetDeleteResponsePartition


@dataclass
class _Topic:
    name: str
    parts: list[tuple[int, ErrorCode]]  # (partition, KafkaApis' pre-check error)
    candidates: list[tuple[str, int]]  # the partitions that passed it: the coordinator's to delete


def _prechecked(ctx: RequestContext, request: Any) -> Generator[None, None, list[_Topic]]:
    """KafkaApis' part, in steps: READ on each topic, then the metadata cache's existence check."""
    refused = authz.denied(ctx, authz.READ, authz.TOPIC, (t.name for t in request.topics))
    checked, pacer, none = [], Pacer(), ErrorCode.NONE
    for topic in request.topics:
        info = ctx.world.cluster.topics.get(topic.name)
        entry = _Topic(topic.name, [], [])
        for p in topic.partitions:
            yield from pacer.pause()
            if topic.name in refused:
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # KafkaApis: READ on each topic, before metadata
            elif info is None or not 0 <= p.partition_index < len(info.partitions):
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # KafkaApis' metadata-cache pre-check
            else:
                error = none
                entry.candidates.append((topic.name, p.partition_index))
            entry.parts.append((p.partition_index, error))
        checked.append(entry)
    return checked


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    checked = yield from _prechecked(ctx, request)
    store = offsets_of(ctx.world).store
    candidates: list[tuple[str, int]] = []
    for t in checked:
        yield
        candidates.extend(t.candidates)
    prepared = yield from store.prepare_deletion(request.group_id, candidates)
    yield
    # The coordinator's part, in one step: the group's check and every tombstone at once, as
    # OffsetMetadataManager.deleteOffsets writes them in one batch (no other request sees half of it); the
    # group's offsets without them were prepared in the steps before.
    check = _check(ctx, request.group_id, {t.name for t in checked if t.candidates})
    if check.error is not ErrorCode.NONE:
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(check.error), throttle_time_ms=0,
                                  topics=[])
    subscribed = {t.name for t in checked if t.candidates and check.is_subscribed(t.name)}
    replaced = store.delete_prepared(prepared, {key for t in checked if t.name in subscribed for key in t.candidates})
    topics, pacer, none = [], Pacer(), ErrorCode.NONE
    for t in checked:
        answered = []
        refusal = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if t.name in subscribed else none
        for index, error in t.parts:
            yield from pacer.pause()
            answered.append(_PARTITION(partition_index=index, error_code=int(refusal if error is none else error)))
        topics.append(_TOPIC(name=t.name, partitions=answered))
    # the deleted offsets and the working lists are freed a slice at a time (all at once: ~20-40 ms)
    yield from released(*(c for t in checked for c in (t.parts, t.candidates)), candidates, prepared.keys,
                        *([replaced] if replaced is not None else []))
    return codec.new_response(API_KEY, ctx.api_version, error_code=0, throttle_time_ms=0, topics=topics)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits(ctx, authz.DELETE, authz.GROUP, request.group_id):
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                                  throttle_time_ms=0, topics=[])
    if not owns_group(ctx.world, ctx.broker.node_id, request.group_id):
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(ErrorCode.NOT_COORDINATOR),
                                  throttle_time_ms=0, topics=[])
    return answer(_answer(ctx, request), sum(len(t.partitions) for t in request.topics))


def _check(ctx: RequestContext, group_id: str, names: set[str]) -> OffsetDeleteCheck:
    if consumer_surface.holds(ctx.world, group_id):
        return OffsetDeleteCheck(ErrorCode.NONE, consumer_surface.subscribed_topics(ctx.world, group_id, names))
    return service_of(ctx.world).validate_offset_delete(group_id)
