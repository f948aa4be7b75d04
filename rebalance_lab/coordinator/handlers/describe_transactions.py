"""DescribeTransactions (65), v0 (``TransactionCoordinator.handleDescribeTransactions``).

DESCRIBE on each transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); "" is INVALID_REQUEST,
an unknown id TRANSACTIONAL_ID_NOT_FOUND; otherwise the state, timeout, start time, producer id and
epoch and the partitions of the transaction (by topic, in the coordinator's set order).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 65
_STATE = codec.response_type(API_KEY).TransactionState
_TOPIC = _STATE.TopicData


def _state(ctx: RequestContext, txn_id: str) -> Any:
    def error(code: ErrorCode) -> Any:
        return _STATE(error_code=code, transactional_id=txn_id, transaction_state="", transaction_timeout_ms=0,
                      transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[])

    if not authz.permits(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, txn_id):
        return error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not txn_id:
        return error(ErrorCode.INVALID_REQUEST)
    if txn_common.not_coordinator(ctx, txn_id):
        return error(ErrorCode.NOT_COORDINATOR)
    txn = txn_common.service(ctx).coordinator.describe(txn_id)
    if txn is None:
        return error(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    by_topic: dict[str, list[int]] = {}
    for topic, index in txn.sorted_partitions():
        by_topic.setdefault(topic, []).append(index)
    return _STATE(error_code=ErrorCode.NONE, transactional_id=txn_id, transaction_state=str(txn.state),
                  transaction_timeout_ms=txn.timeout_ms, transaction_start_time_ms=txn.start_ms,
                  producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                  topics=[_TOPIC(topic=t, partitions=p) for t, p in by_topic.items()])


def handle(ctx: RequestContext, request: Any) -> Any:
    states = [_state(ctx, txn_id) for txn_id in request.transactional_ids]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, transaction_states=states)
