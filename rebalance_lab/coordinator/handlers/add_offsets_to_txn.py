"""AddOffsetsToTxn (25), v0-4: put the group's ``__consumer_offsets`` partition into the transaction.

``KafkaApis.handleAddOffsetsToTxnRequest``: WRITE on the transactional id, READ on the group, then
the coordinator adds ``__consumer_offsets-<partitionFor(group)>`` like any partition (PRODUCER_FENCED
is INVALID_PRODUCER_EPOCH before v2).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.routing import partition_for
from rebalance_lab.coordinator.transactions.service import OFFSETS_TOPIC
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 25


def handle(ctx: RequestContext, request: Any) -> Any:
    txn_id = request.transactional_id
    if not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
        return _reply(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authz.permits(ctx, authz.READ, authz.GROUP, request.group_id):
        return _reply(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not txn_id:
        return _reply(ctx, ErrorCode.INVALID_REQUEST)
    if txn_common.not_coordinator(ctx, txn_id):
        return _reply(ctx, ErrorCode.NOT_COORDINATOR)
    partition = (OFFSETS_TOPIC, partition_for(request.group_id, ctx.world.config.group.offsets_topic_num_partitions))
    now = ctx.world.now_ms()
    service = txn_common.service(ctx)
    error = service.coordinator.add_partitions(txn_id, request.producer_id, request.producer_epoch, {partition}, now)
    service.after(txn_id, now)
    return _reply(ctx, txn_common.for_version(error, ctx.api_version, 2))


def _reply(ctx: RequestContext, error: ErrorCode) -> Any:
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error)
