"""AddPartitionsToTxn (24): v0-3 from producers, v4+ batched (KIP-890, brokers verifying a transaction).

``KafkaApis.handleAddPartitionsToTxnRequest``: without WRITE on the transactional id every partition
gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a topic without WRITE -> TOPIC_AUTHORIZATION_FAILED, an
unknown one -> UNKNOWN_TOPIC_OR_PARTITION, and then every other partition OPERATION_NOT_ATTEMPTED;
else the coordinator's one verdict for all partitions (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v2). v4+ needs CLUSTER_ACTION on the cluster and carries several transactions, each either
added or only verified (``VerifyOnly``: TRANSACTION_ABORTABLE for a partition not in it).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.acls import Operation

API_KEY = 24
_BATCHED_FROM = 4
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.AddPartitionsToTxnTopicResult
_PARTITION = _TOPIC.AddPartitionsToTxnPartitionResult
_RESULT = _RESPONSE.AddPartitionsToTxnResult

Errors = dict[tuple[str, int], ErrorCode]


def _requested(topics: list[Any]) -> list[tuple[str, int]]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _prechecked(ctx: RequestContext, partitions: list[tuple[str, int]]) -> Errors:
    errors: Errors = {}
    for topic, index in partitions:
        info = ctx.world.cluster.topics.get(topic)
        if not authz.permits(ctx, authz.WRITE, authz.TOPIC, topic):
            errors[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif info is None or not 0 <= index < len(info.partitions):
            errors[(topic, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return errors


def _one(ctx: RequestContext, txn_id: str, pid: int, epoch: int, topics: list[Any], verify_only: bool) -> Errors:
    partitions = _requested(topics)
    if not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in partitions}
    failed = _prechecked(ctx, partitions)
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    if not txn_id:
        return {tp: ErrorCode.INVALID_REQUEST for tp in partitions}
    if txn_common.not_coordinator(ctx, txn_id):
        return {tp: ErrorCode.NOT_COORDINATOR for tp in partitions}
    service = txn_common.service(ctx)
    if verify_only:
        return service.coordinator.verify_partitions(txn_id, pid, epoch, partitions)
    error = service.coordinator.add_partitions(txn_id, pid, epoch, set(partitions), ctx.world.now_ms())
    service.after(txn_id, ctx.world.now_ms())
    error = txn_common.for_version(error, ctx.api_version, 2)
    return {tp: error for tp in partitions}


def _topic_results(errors: Errors) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append(_PARTITION(partition_index=index, partition_error_code=error))
    return [_TOPIC(name=name, results_by_partition=parts) for name, parts in by_topic.items()]


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version < _BATCHED_FROM:
        errors = _one(ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                      request.v3_and_below_producer_epoch, request.v3_and_below_topics, False)
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  results_by_topic_v3_and_below=_topic_results(errors))
    if not authz.permits_cluster(ctx, Operation.CLUSTER_ACTION):
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    results = [
        _RESULT(transactional_id=t.transactional_id,
                topic_results=_topic_results(_one(ctx, t.transactional_id, t.producer_id, t.producer_epoch,
                                                  t.topics, t.verify_only)))
        for t in request.transactions
    ]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              results_by_transaction=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    """``AddPartitionsToTxnRequest.getErrorResponse``: every partition (v4+: the top-level code) with the error."""
    if api_version >= _BATCHED_FROM:
        return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code,
                                  results_by_transaction=[])
    errors = {tp: code for tp in _requested(request.v3_and_below_topics)}
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0,
                              results_by_topic_v3_and_below=_topic_results(errors))

