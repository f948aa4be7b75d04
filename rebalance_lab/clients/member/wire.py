"""Translation between the member's plain calls/results and kafka-python wire bodies.

All group requests go through :mod:`rebalance_lab.protocol.codec`; fields a version
lacks are simply dropped by the codec, so one builder serves every version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rebalance_lab.clients.assignors.types import ClusterView, PartitionMeta
from rebalance_lab.clients.member import calls as c
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

METADATA, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 3, 10, 11, 12, 13, 14


def _error(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def join_request(group_id: str, call: c.JoinGroupCall, version: int) -> Any:
    protocol = codec.data_class(codec.request_type(JOIN_GROUP), "JoinGroupRequestProtocol")
    return codec.new_request(
        JOIN_GROUP, version,
        group_id=group_id,
        session_timeout_ms=call.session_timeout_ms,
        rebalance_timeout_ms=call.rebalance_timeout_ms,
        member_id=call.member_id,
        group_instance_id=call.group_instance_id,
        protocol_type=call.protocol_type,
        protocols=[protocol(name=name, metadata=metadata) for name, metadata in call.protocols],
        reason=call.reason,
    )


def join_result(response: Any) -> c.JoinGroupResult:
    members = tuple(
        c.JoinedMember(m.member_id, getattr(m, "group_instance_id", None), bytes(m.metadata))
        for m in response.members
    )
    return c.JoinGroupResult(
        error=_error(response.error_code),
        member_id=response.member_id,
        generation_id=response.generation_id,
        protocol_name=response.protocol_name,
        leader=response.leader,
        members=members,
        skip_assignment=bool(getattr(response, "skip_assignment", False)),
    )


def sync_request(group_id: str, call: c.SyncGroupCall, version: int) -> Any:
    item = codec.data_class(codec.request_type(SYNC_GROUP), "SyncGroupRequestAssignment")
    return codec.new_request(
        SYNC_GROUP, version,
        group_id=group_id,
        generation_id=call.generation_id,
        member_id=call.member_id,
        group_instance_id=call.group_instance_id,
        protocol_type=call.protocol_type,
        protocol_name=call.protocol_name,
        assignments=[item(member_id=m, assignment=a) for m, a in call.assignments],
    )


def sync_result(response: Any) -> c.SyncGroupResult:
    return c.SyncGroupResult(
        error=_error(response.error_code),
        assignment=bytes(response.assignment or b""),
        protocol_name=getattr(response, "protocol_name", None),
    )


def heartbeat_request(group_id: str, call: c.HeartbeatCall, version: int) -> Any:
    return codec.new_request(
        HEARTBEAT, version,
        group_id=group_id,
        generation_id=call.generation_id,
        member_id=call.member_id,
        group_instance_id=call.group_instance_id,
    )


def heartbeat_result(response: Any) -> c.HeartbeatResult:
    return c.HeartbeatResult(_error(response.error_code))


def leave_request(group_id: str, leaving: Sequence[c.LeaveGroupCall], version: int) -> Any:
    """v0-2 carry one member id; v3+ a member list (KIP-345 batch leave)."""
    if version < 3:
        if len(leaving) != 1:
            raise ValueError(f"LeaveGroup v{version} carries exactly one member")
        return codec.new_request(LEAVE_GROUP, version, group_id=group_id, member_id=leaving[0].member_id)
    identity = codec.data_class(codec.request_type(LEAVE_GROUP), "MemberIdentity")
    members = [identity(member_id=x.member_id, group_instance_id=x.group_instance_id, reason=x.reason)
               for x in leaving]
    return codec.new_request(LEAVE_GROUP, version, group_id=group_id, members=members)


def find_coordinator_request(key: str, version: int) -> Any:
    if version >= 4:
        return codec.new_request(FIND_COORDINATOR, version, key_type=0, coordinator_keys=[key])
    return codec.new_request(FIND_COORDINATOR, version, key=key, key_type=0)


@dataclass(frozen=True)
class CoordinatorInfo:
    error: ErrorCode
    node_id: int
    host: str
    port: int


def coordinator_info(response: Any, version: int) -> CoordinatorInfo:
    if version >= 4:
        entry = response.coordinators[0]
        return CoordinatorInfo(_error(entry.error_code), entry.node_id, entry.host, entry.port)
    return CoordinatorInfo(_error(response.error_code), response.node_id, response.host, response.port)


def metadata_request(topics: Sequence[str], version: int, auto_create: bool = False) -> Any:
    topic = codec.data_class(codec.request_type(METADATA), "MetadataRequestTopic")
    return codec.new_request(
        METADATA, version,
        topics=[topic(name=t) for t in topics],
        allow_auto_topic_creation=auto_create,
        include_topic_authorized_operations=False,
    )


def cluster_view(response: Any) -> ClusterView:
    """Topic -> partitions with replica racks, as the leader's ``Cluster`` shows them.
    Topics with an error or no partitions are left out (Java skips them too)."""
    racks = {b.node_id: getattr(b, "rack", None) for b in response.brokers}
    topics: dict[str, tuple[PartitionMeta, ...]] = {}
    for topic in response.topics:
        if topic.error_code != 0 or not topic.partitions:
            continue
        topics[topic.name] = tuple(
            PartitionMeta(p.partition_index, tuple(racks.get(r) for r in p.replica_nodes))
            for p in sorted(topic.partitions, key=lambda p: p.partition_index)
        )
    return ClusterView(topics)
