"""AlterPartitionReassignments (45), v0-1, as KRaft's ``ReplicationControlManager.alterPartitionReassignments``
answers on Kafka 4.4.0, on the emulated brokers.

ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the request. Per partition: "Unable to find a
topic named T." / "Unable to find partition T:P." (UNKNOWN_TOPIC_OR_PARTITION); null replicas cancel a
reassignment, and none is ever in progress (NO_REASSIGNMENT_IN_PROGRESS); the new replicas are checked
as ``validateManualPartitionAssignment`` does (INVALID_REPLICA_ASSIGNMENT: empty, a broker twice, a broker
not registered). A valid reassignment completes at once: replication is instant here, so the adding
replicas are in sync immediately; Metadata shows the new replicas and ISR, and a leader that left the
set is replaced (new leader epoch). v1's allow_replication_factor_change=false is not checked (FIDELITY.md).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 45
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.ReassignableTopicResponse
_PARTITION = _TOPIC.ReassignablePartitionResponse


def _reassign(ctx: RequestContext, topic: str, p: Any) -> tuple[ErrorCode, str | None]:
    cluster = ctx.world.cluster
    info = cluster.topics.get(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= p.partition_index < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{p.partition_index}."
    if p.replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    try:
        cluster.reassign(topic, p.partition_index, list(p.replicas))
    except KafkaError as exc:
        return exc.code, str(exc)
    return ErrorCode.NONE, None


def _response(ctx: RequestContext, request: Any, code: ErrorCode, message: str | None, topics: list[Any]) -> Any:
    fields: dict[str, Any] = {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                              "responses": topics}
    if ctx.api_version >= 1:
        fields["allow_replication_factor_change"] = getattr(request, "allow_replication_factor_change", True)
    return codec.new_response(API_KEY, ctx.api_version, **fields)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits_cluster(ctx, authz.ALTER):
        return _response(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])
    topics = []
    for t in request.topics:
        answers = [(p.partition_index, *_reassign(ctx, t.name, p)) for p in t.partitions]
        topics.append(_TOPIC(name=t.name, partitions=[_PARTITION(partition_index=i, error_code=c, error_message=m)
                                                      for i, c, m in answers]))
    return _response(ctx, request, ErrorCode.NONE, None, topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code, error_message=None,
                              responses=[])
