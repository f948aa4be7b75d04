"""ListTransactions (66), v0-2 (``TransactionStateManager.listTransactionStates``).

Filters: states (names Kafka does not know are echoed in UnknownStateFilters and match nothing),
producer ids, v1+ a duration (only transactions whose start is more than that long ago: ``now - start >
duration``, so a transaction without a start time, -1, always passes), v2+ a transactional-id regular
expression. Only transactional ids the caller may DESCRIBE are listed; Dead ones never.
"""

from __future__ import annotations

import re
from typing import Any

from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.transactions.state import TxnMetadata, TxnState
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 66
_STATE = codec.response_type(API_KEY).TransactionState
_KNOWN = {str(s) for s in TxnState}


def _matches(txn: TxnMetadata, request: Any, now_ms: int, pattern: re.Pattern[str] | None) -> bool:
    if request.state_filters and str(txn.state) not in request.state_filters:
        return False
    if request.producer_id_filters and txn.producer_id not in request.producer_id_filters:
        return False
    duration = getattr(request, "duration_filter", -1)
    if duration >= 0 and now_ms - txn.start_ms <= duration:
        return False
    return pattern is None or pattern.fullmatch(txn.transactional_id) is not None


def handle(ctx: RequestContext, request: Any) -> Any:
    unknown = [s for s in request.state_filters or [] if s not in _KNOWN]
    text = getattr(request, "transactional_id_pattern", None)
    try:
        pattern = re.compile(text) if text else None
    except re.error:
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, unknown_state_filters=[],
                                  transaction_states=[])
    listed = []
    now = ctx.world.now_ms()
    for txn in txn_common.service(ctx).coordinator.txns.values():
        if txn.state is TxnState.DEAD or not _matches(txn, request, now, pattern):
            continue
        if authz.permits(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, txn.transactional_id):
            listed.append(_STATE(transactional_id=txn.transactional_id, producer_id=txn.producer_id,
                                 transaction_state=str(txn.state)))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              unknown_state_filters=unknown, transaction_states=listed)
