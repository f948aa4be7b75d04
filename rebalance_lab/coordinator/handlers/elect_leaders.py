"""ElectLeaders (43), v0-2, as KRaft's ``ReplicationControlManager.electLeaders`` answers on Kafka 4.4.0.

ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the request and every partition. An election
type other than PREFERRED (0) or UNCLEAN (1) -> INVALID_REQUEST "Unknown election type N" likewise.
Per partition: "No such topic as T" / "No such partition as T-P" (UNKNOWN_TOPIC_OR_PARTITION);
ELECTION_NOT_NEEDED when the preferred replica leads (PREFERRED) or there is a leader (UNCLEAN);
PREFERRED moves leadership to the first replica when it is in the ISR and its broker is up (else
PREFERRED_LEADER_NOT_AVAILABLE); UNCLEAN makes the first live in-sync replica, else the first live
replica, the leader with an ISR of itself (else ELIGIBLE_LEADERS_NOT_AVAILABLE). A new leader bumps the
leader epoch. Null topic partitions means every partition, and then only the partitions whose election
was needed are listed (every topic is, even with none).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.cluster import PartitionInfo
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 43
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.ReplicaElectionResult
_PARTITION = _TOPIC.PartitionResult
PREFERRED, UNCLEAN = 0, 1
_MESSAGES = {  # Errors' default messages, which ApiError(Errors) carries
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


def _usable(ctx: RequestContext) -> set[int]:
    return {i for i, node in ctx.world.nodes.items() if node.up and i not in ctx.world.cluster.fenced}


def _elect(ctx: RequestContext, p: PartitionInfo, election: int) -> ErrorCode:
    usable = _usable(ctx)
    has_leader = p.leader_id in usable
    if (election == PREFERRED and p.leader_id == p.replicas[0] and has_leader) or (election == UNCLEAN and has_leader):
        return ErrorCode.ELECTION_NOT_NEEDED
    if election == PREFERRED:
        preferred = p.replicas[0]
        if preferred not in p.isr or preferred not in usable:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        new_leader = preferred
    else:
        clean = [r for r in p.replicas if r in p.isr and r in usable]
        candidates = clean or [r for r in p.replicas if r in usable]
        if not candidates:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        new_leader = candidates[0]
        if not clean:
            p.isr = [new_leader]
    p.leader_id = new_leader
    p.leader_epoch += 1
    return ErrorCode.NONE


def _one(ctx: RequestContext, topic: str, index: int, election: int) -> tuple[ErrorCode, str | None]:
    info = ctx.world.cluster.topics.get(topic)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= index < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    code = _elect(ctx, info.partitions[index], election)
    if code == ErrorCode.NONE:
        ctx.world.cluster.leadership_changed(topic)
    return code, _MESSAGES.get(code)


def _failed(ctx: RequestContext, request: Any, code: ErrorCode, message: str) -> Any:
    topics = [_TOPIC(topic=t.topic, partition_result=[_PARTITION(partition_id=p, error_code=code, error_message=message)
                                                      for p in t.partitions]) for t in request.topic_partitions or []]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=code,
                              replica_election_results=topics)


def handle(ctx: RequestContext, request: Any) -> Any:
    election = getattr(request, "election_type", PREFERRED)
    if not authz.permits_cluster(ctx, authz.ALTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _failed(ctx, request, code, _MESSAGES[code])
    if election not in (PREFERRED, UNCLEAN):
        return _failed(ctx, request, ErrorCode.INVALID_REQUEST, f"Unknown election type {election}")
    results = []
    if request.topic_partitions is None:
        for name, info in ctx.world.cluster.topics.items():
            answers = [(p.partition, *_one(ctx, name, p.partition, election)) for p in info.partitions]
            results.append(_TOPIC(topic=name, partition_result=[
                _PARTITION(partition_id=i, error_code=c, error_message=m) for i, c, m in answers
                if c != ErrorCode.ELECTION_NOT_NEEDED]))
    else:
        for t in request.topic_partitions:
            answers = [(i, *_one(ctx, t.topic, i, election)) for i in t.partitions]
            results.append(_TOPIC(topic=t.topic, partition_result=[
                _PARTITION(partition_id=i, error_code=c, error_message=m) for i, c, m in answers]))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              replica_election_results=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    topics = [_TOPIC(topic=t.topic, partition_result=[_PARTITION(partition_id=p, error_code=code, error_message=None)
                                                      for p in t.partitions]) for t in request.topic_partitions or []]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code,
                              replica_election_results=topics)
