"""CreatePartitions (37), v0-3, as KRaft's ``ControllerApis.createPartitions`` and
``ReplicationControlManager.createPartitions`` answer it.

* a topic named twice -> one INVALID_REQUEST "Duplicate topic name." result; these
  come first, then the other topics, each group in ``java.util.HashSet`` order
  (checked against Kafka 4.4);
* unknown -> UNKNOWN_TOPIC_OR_PARTITION with no message; a count that is not an
  increase -> INVALID_PARTITIONS; manual assignments must cover exactly the new
  partitions (INVALID_REPLICA_ASSIGNMENT); ``validate_only`` changes nothing.

New partitions are placed through the same placement seam as topic creation. More than
10,000 additional partitions in one request fail the whole request, every topic in request
order, with POLICY_VIOLATION (Kafka 4.x); the kafka-3 flavor fails the topic that overflows
3.9.2's record list with UNKNOWN_SERVER_ERROR (``controller_limits.py``).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import controller_limits
from rebalance_lab.coordinator.controller_limits import RecordBudget
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.create_topics import java_set_order
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 37
_RESULT = codec.response_type(API_KEY).CreatePartitionsTopicResult


def _grow(ctx: RequestContext, topic: Any, validate_only: bool, budget: RecordBudget | None) -> Any:
    assignments = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
    if budget is not None and not budget.take(_increase(ctx, topic)):
        return _RESULT(name=topic.name, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
    try:
        ctx.world.cluster.add_partitions(topic.name, topic.count, assignments, validate_only=validate_only)
    except KafkaError as exc:
        message = None if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else str(exc)
        return _RESULT(name=topic.name, error_code=exc.code, error_message=message)
    return _RESULT(name=topic.name, error_code=ErrorCode.NONE, error_message=None)


def _increase(ctx: RequestContext, topic: Any) -> int:
    info = ctx.world.cluster.topics.get(topic.name)
    return 0 if info is None else max(0, topic.count - len(info.partitions))


def _request_error(ctx: RequestContext, topics: list[Any]) -> str | None:
    existing = ctx.world.cluster.topics
    current = {t.name: len(existing[t.name].partitions) for t in topics if t.name in existing}
    return controller_limits.create_partitions_error(ctx.world.config.flavor, topics, current)


def handle(ctx: RequestContext, request: Any) -> Any:
    refused = _request_error(ctx, list(request.topics))
    if refused is not None:  # the controller failed the whole request: every topic, in request order
        failed = [_RESULT(name=t.name, error_code=ErrorCode.POLICY_VIOLATION, error_message=refused)
                  for t in request.topics]
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=failed)
    seen: list[str] = []
    duplicates: list[str] = []
    for topic in request.topics:
        (duplicates if topic.name in seen else seen).append(topic.name)
    results = [
        _RESULT(name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name.")
        for name in java_set_order(list(dict.fromkeys(duplicates)))
    ]
    by_name = {t.name: t for t in request.topics}
    budget = RecordBudget() if ctx.world.config.flavor == Flavor.KAFKA_3 else None
    for name in java_set_order([n for n in seen if n not in duplicates]):
        if not authz.permits(ctx, authz.ALTER, authz.TOPIC, name):  # ControllerApis: ALTER on each topic
            results.append(_RESULT(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None))
            continue
        results.append(_grow(ctx, by_name[name], bool(request.validate_only), budget))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    results = [_RESULT(name=t.name, error_code=code, error_message=None) for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, results=results)
