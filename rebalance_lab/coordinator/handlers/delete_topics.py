"""DeleteTopics (20), v1-6: by name, or (v6+) by name or topic id.

KRaft's ``ControllerApis.deleteTopics``: an unknown name ->
UNKNOWN_TOPIC_OR_PARTITION, an unknown id -> UNKNOWN_TOPIC_ID, an entry with both a
name and an id or with neither -> INVALID_REQUEST; a name (id) given twice gets one
INVALID_REQUEST "Duplicate topic name." ("Duplicate topic id.") result. Kafka
shuffles the results (``Collections.shuffle``, so clients cannot infer anything from
positions); the emulator keeps the input order: invalid entries, duplicates, then
the rest. A deleted topic's logs go with it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, counted
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 20
_RESULT = codec.response_type(API_KEY).DeletableTopicResult
_ZERO_UUID = uuid.UUID(int=0)

Entry = tuple[str | None, uuid.UUID | None]


def _entries(ctx: RequestContext, request: Any) -> list[Entry]:
    if ctx.api_version >= 6:
        return [(t.name, None if t.topic_id in (None, _ZERO_UUID) else t.topic_id) for t in request.topics]
    return [(name, None) for name in request.topic_names]


def _result(name: str | None, topic_id: uuid.UUID | None, code: ErrorCode, message: str | None) -> Any:
    return _RESULT(name=name, topic_id=topic_id or _ZERO_UUID, error_code=code, error_message=message)


def _invalid(entries: list[Entry]) -> list[Any]:
    results = []
    for name, topic_id in entries:
        if name is not None and topic_id is not None:
            results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST,
                                   "You may not specify both topic name and topic id."))
        elif name is None and topic_id is None:
            results.append(_result(None, None, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."))
    return results


def _refusal(ctx: RequestContext, name: str, by_id: uuid.UUID | None) -> Any | None:
    """ControllerApis.deleteTopics: DELETE on the cluster allows every topic; otherwise DESCRIBE and DELETE on
    the topic, checked before its existence (a topic named by id keeps its name only if describable)."""
    if authz.permits_cluster(ctx, authz.DELETE):
        return None
    describable = authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, name)
    if describable and by_id is None and name not in ctx.world.cluster.topics:
        return None  # UNKNOWN_TOPIC_OR_PARTITION comes before the DELETE check
    if describable and authz.permits(ctx, authz.DELETE, authz.TOPIC, name):
        return None
    shown = name if describable or by_id is None else None
    return _result(shown, by_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)


def _delete(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None) -> Any:
    cluster = ctx.world.cluster
    if topic_id is not None:
        found = cluster.topic_by_id(topic_id)
        if found is None:
            return _result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
        name = found.name
    assert name is not None
    refused = _refusal(ctx, name, topic_id)
    if refused is not None:
        return refused
    try:
        info = cluster.delete_topic(name)
    except KafkaError as exc:
        return _result(name, None, exc.code, str(exc))
    return _result(info.name, info.topic_id, ErrorCode.NONE, None)


def handle(ctx: RequestContext, request: Any) -> Any:
    entries = _entries(ctx, request)
    return answer(_answer(ctx, entries), len(entries))


def _answer(ctx: RequestContext, entries: list[Entry]) -> Generator[None, None, Any]:
    valid = [(n, i) for n, i in entries if (n is None) != (i is None)]
    counts: Counter[str | uuid.UUID | None] = yield from counted(n if i is None else i for n, i in valid)
    results = _invalid(entries)
    for key in dict.fromkeys(k for k, c in counts.items() if c > 1):
        if isinstance(key, uuid.UUID):
            results.append(_result(None, key, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
        else:
            results.append(_result(key, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    pacer = Pacer()
    for name, topic_id in valid:
        yield from pacer.pause()  # each topic is deleted from one state; others are served in between
        if counts[name if topic_id is None else topic_id] == 1:
            results.append(_delete(ctx, name, topic_id))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, responses=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    if api_version >= 6:
        results = [_result(t.name, t.topic_id, code, None) for t in request.topics]
    else:
        results = [_result(name, None, code, None) for name in request.topic_names]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, responses=results)
