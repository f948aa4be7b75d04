"""InitProducerId (22), v0-6: producer ids for idempotent producers.

``TransactionCoordinator.handleInitProducerId``: without a transactional id the
broker always hands out a fresh producer id with epoch 0, whatever id/epoch the
request carries (KIP-360 bumps apply to transactional producers only). Ids come in
blocks of 1000 per broker, the first being 0 (``ProducerIdControlManager``).

Transactions are not emulated: a transactional id gets a stable id and a bumped
epoch on each call, with no coordinator check, but AddPartitionsToTxn/EndTxn are
not served, so a transactional producer fails later (FIDELITY.md). Sequence numbers
are not checked on Produce (no OUT_OF_ORDER_SEQUENCE_NUMBER); only an exact retry
of one of a producer's last five batches is deduplicated.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.dataplane import dataplane
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 22
_MAX_TRANSACTION_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms


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
    if not 0 < request.transaction_timeout_ms <= _MAX_TRANSACTION_TIMEOUT_MS:
        return _reply(ctx, ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1)
    known = ids.transactional.get(txn_id)
    pid, epoch = (ids.allocate(ctx.broker.node_id), 0) if known is None else (known[0], known[1] + 1)
    ids.transactional[txn_id] = (pid, epoch)
    return _reply(ctx, ErrorCode.NONE, pid, epoch)


def _reply(ctx: RequestContext, error: ErrorCode, producer_id: int, epoch: int) -> Any:
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error,
                              producer_id=producer_id, producer_epoch=epoch)
