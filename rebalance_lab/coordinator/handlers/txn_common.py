"""What the transaction handlers share: the coordinator of a transactional id, old versions' error."""

from __future__ import annotations

from rebalance_lab.coordinator.group_service import owns_group
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.transactions.service import TransactionService, transactions_of
from rebalance_lab.protocol.errors import ErrorCode


def service(ctx: RequestContext) -> TransactionService:
    return transactions_of(ctx.world)


def not_coordinator(ctx: RequestContext, transactional_id: str) -> bool:
    """The transactional id's coordinator is another broker (its state partition's leader)."""
    return bool(transactional_id) and not owns_group(ctx.world, ctx.broker.node_id, transactional_id)


def for_version(error: ErrorCode, api_version: int, fenced_from: int) -> ErrorCode:
    """KafkaApis: clients older than the version that knows PRODUCER_FENCED get INVALID_PRODUCER_EPOCH."""
    if error is ErrorCode.PRODUCER_FENCED and api_version < fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
