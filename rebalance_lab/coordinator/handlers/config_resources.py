"""What the three config APIs share: resource types, broker ids, authorization, entries on the wire.

Follows ``ConfigHelper`` / ``ConfigAdminManager`` (Kafka 4.4.0; 3.9.2 answers the same here): a topic
resource needs DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, a broker or broker-logger resource on the
cluster; refused resources get TOPIC_/CLUSTER_AUTHORIZATION_FAILED with the exception's default message
when described, no message when altered (``configsAuthorizationApiError``).
"""

from __future__ import annotations

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from rebalance_lab.security.acls import Operation

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32  # ConfigResource.Type ids
AUTHORIZATION_MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}


def authorization_error(ctx: RequestContext, operation: Operation, resource_type: int, name: str) -> ErrorCode | None:
    """The error of a resource the caller may not describe/alter, None when allowed or not ours to check."""
    if resource_type == TOPIC:
        allowed = authz.permits(ctx, operation, authz.TOPIC, name)
        return None if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS):
        return None if authz.permits_cluster(ctx, operation) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource_type == GROUP:
        allowed = authz.permits(ctx, operation, authz.GROUP, name)
        return None if allowed else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def node_id_of(name: str, expected: int, describe: bool) -> int:
    """The broker id a resource names; INVALID_REQUEST with Kafka's messages when it is not this broker."""
    try:
        node_id = int(name)
    except ValueError:
        word = "Broker" if describe else "Node"
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{word} id must be an integer, but it is: {name}") from None
    if node_id != expected:
        tail = " or empty string," if describe else ","
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {expected}{tail} but received {name}")
    return node_id


def message_of(exc: KafkaError) -> str | None:
    """The error message a result carries: none for the errors Kafka answers without one."""
    return None if exc.code == ErrorCode.UNKNOWN_SERVER_ERROR else str(exc)
