"""EndTxn (26), v0-5: commit or abort the transaction (``KafkaApis.handleEndTxnRequest``).

WRITE on the transactional id, then the coordinator's verdict (``transactions/coordinator.py``);
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2. The markers are written before the answer
(Kafka writes them just after it), unless a fault delays them. v5 is transaction version 2 (KIP-890):
the end bumps the epoch and the answer carries the producer id and the new epoch (-1/-1 on errors).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 26
_TV2_FROM = 5


def handle(ctx: RequestContext, request: Any) -> Any:
    txn_id = request.transactional_id
    if not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
        return _reply(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not txn_id:
        return _reply(ctx, ErrorCode.INVALID_REQUEST)
    if txn_common.not_coordinator(ctx, txn_id):
        return _reply(ctx, ErrorCode.NOT_COORDINATOR)
    service = txn_common.service(ctx)
    now = ctx.world.now_ms()
    result = service.coordinator.end_txn(txn_id, request.producer_id, request.producer_epoch, request.committed, now,
                                         tv2=ctx.api_version >= _TV2_FROM)
    service.after(txn_id, now)
    return _reply(ctx, txn_common.for_version(result.error, ctx.api_version, 2), result.producer_id,
                  result.producer_epoch)


def _reply(ctx: RequestContext, error: ErrorCode, producer_id: int = -1, epoch: int = -1) -> Any:
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error,
                              producer_id=producer_id, producer_epoch=epoch)
