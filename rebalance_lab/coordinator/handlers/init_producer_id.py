"""InitProducerId (22), v0-6: producer ids for idempotent producers.

``TransactionCoordinator.handleInitProducerId``: without a transactional id the
broker always hands out a fresh producer id with epoch 0, whatever id/epoch the
request carries (KIP-360 bumps apply to transactional producers only). Ids come in
blocks of 1000 per broker, the first being 0 (``ProducerIdControlManager``).

A transactional id goes to the transaction coordinator (``transactions/coordinator.py``):
epochs, KIP-360 bumps with the expected producer id and epoch (v3+), fencing of an ongoing
transaction (CONCURRENT_TRANSACTIONS, then a bumped epoch on the retry). PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v4, as ``KafkaApis.handleInitProducerIdRequest`` sends it.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.dataplane import dataplane
from rebalance_lab.coordinator.group_service import owns_group
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 22
_PRODUCER_FENCED_FROM = 4  # older clients get INVALID_PRODUCER_EPOCH instead


def handle(ctx: RequestContext, request: Any) -> Any:
    ids = dataplane(ctx.world).producer_ids
    txn_id = request.transactional_id
    # KafkaApis: WRITE on the transactional id; an idempotent producer needs IDEMPOTENT_WRITE on the cluster
    # or WRITE on some topic
    if txn_id is not None and not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
        return _reply(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    if txn_id is None and not authz.may_write_idempotently(ctx):
        return _reply(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    if txn_id is None:
        return _reply(ctx, ErrorCode.NONE, ids.allocate(ctx.broker.node_id), 0)
    if txn_id == "":
        return _reply(ctx, ErrorCode.INVALID_REQUEST, -1, -1)
    if not owns_group(ctx.world, ctx.broker.node_id, txn_id):
        return _reply(ctx, ErrorCode.NOT_COORDINATOR, -1, -1)
    pid, epoch = getattr(request, "producer_id", -1), getattr(request, "producer_epoch", -1)
    if (pid == -1) != (epoch == -1):
        return _reply(ctx, ErrorCode.INVALID_REQUEST, -1, -1)
    service = transactions_of(ctx.world)
    result = service.coordinator.init_producer_id(
        txn_id, request.transaction_timeout_ms, None if pid == -1 else (pid, epoch), ctx.world.now_ms(),
        lambda: ids.allocate(ctx.broker.node_id))
    service.after(txn_id, ctx.world.now_ms())
    error = result.error
    if error is ErrorCode.PRODUCER_FENCED and ctx.api_version < _PRODUCER_FENCED_FROM:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return _reply(ctx, error, result.producer_id, result.producer_epoch)


def _reply(ctx: RequestContext, error: ErrorCode, producer_id: int, epoch: int) -> Any:
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error,
                              producer_id=producer_id, producer_epoch=epoch)
