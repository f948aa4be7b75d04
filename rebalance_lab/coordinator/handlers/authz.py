"""The authorization checks handlers make, as ``kafka.server.AuthHelper`` offers them to KafkaApis.

Without an authorizer (no ``--acl-file``) every check passes and the authorized-operations fields
hold every supported operation, as on a broker without ``authorizer.class.name``.
"""

from __future__ import annotations

from collections.abc import Iterable

from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from rebalance_lab.security.acls import CLUSTER_NAME, Operation, ResourceType
from rebalance_lab.security.authorizer import all_operations

READ, WRITE, CREATE, DELETE = Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE
ALTER, DESCRIBE, IDEMPOTENT_WRITE = Operation.ALTER, Operation.DESCRIBE, Operation.IDEMPOTENT_WRITE
DESCRIBE_CONFIGS = Operation.DESCRIBE_CONFIGS
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


def permits(ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    authorizer = ctx.world.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name)


def permits_cluster(ctx: RequestContext, operation: Operation) -> bool:
    return permits(ctx, operation, CLUSTER, CLUSTER_NAME)


def denied(ctx: RequestContext, operation: Operation, resource_type: ResourceType, names: Iterable[str]) -> set[str]:
    """The names among ``names`` the caller may not ``operation`` (AuthHelper.filterByAuthorized's complement)."""
    if ctx.world.authorizer is None:
        return set()
    return {name for name in set(names) if not permits(ctx, operation, resource_type, name)}


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    authorizer = ctx.world.authorizer
    if authorizer is None:
        return all_operations(resource_type)
    return authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)


def may_create_topic(ctx: RequestContext, topic: str) -> bool:
    """CREATE on the cluster or on the topic (KafkaApis's auto-creation and CreateTopics checks)."""
    return permits_cluster(ctx, CREATE) or permits(ctx, CREATE, TOPIC, topic)


def require_group(ctx: RequestContext, operation: Operation, group_id: str) -> None:
    """GROUP_AUTHORIZATION_FAILED for the whole request, as KafkaApis answers before the coordinator sees it."""
    if not permits(ctx, operation, GROUP, group_id):
        raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)


def operation_bits(ctx: RequestContext, resource_type: ResourceType, name: str) -> set[int]:
    """:func:`authorized_operations` as the set of its bits (how kafka-python encodes a bitfield)."""
    field = authorized_operations(ctx, resource_type, name)
    return {bit for bit in range(32) if field >> bit & 1}


def may_write_idempotently(ctx: RequestContext) -> bool:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    authorizer = ctx.world.authorizer
    if authorizer is None or permits_cluster(ctx, IDEMPOTENT_WRITE):
        return True
    return authorizer.authorize_any(ctx.principal, ctx.client_host, WRITE, TOPIC)
