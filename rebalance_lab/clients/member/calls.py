"""Plain values exchanged between the sans-I/O member state and its I/O driver.

``*Call`` values describe a request to send; ``*Result`` values carry the fields of a
response the state machine needs. Neither knows about the wire codec, so the state
machine is testable without sockets, and the driver owns every codec detail.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.protocol.errors import ErrorCode

Protocols = tuple[tuple[str, bytes], ...]  # ordered (name, metadata): the client's preference


@dataclass(frozen=True)
class JoinGroupCall:
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    reason: str | None = None


@dataclass(frozen=True)
class SyncGroupCall:
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocol_name: str
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class HeartbeatCall:
    generation_id: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True)
class LeaveGroupCall:
    member_id: str
    group_instance_id: str | None
    reason: str | None = None


@dataclass(frozen=True)
class JoinedMember:
    """One entry of the leader's JoinGroup member list."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResult:
    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncGroupResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_name: str | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode


# ---------------------------------------------------------------- what the driver must do next


@dataclass(frozen=True)
class SendJoin:
    call: JoinGroupCall


@dataclass(frozen=True)
class RunAssignor:
    """This member leads: compute an assignment for ``members`` with ``protocol_name``."""

    generation_id: int
    protocol_name: str
    members: tuple[JoinedMember, ...]


@dataclass(frozen=True)
class SendSync:
    call: SyncGroupCall


@dataclass(frozen=True)
class Assigned:
    """The rebalance finished: the member is stable with ``partitions``."""

    generation_id: int
    partitions: tuple[TopicPartition, ...]
    added: tuple[TopicPartition, ...] = ()
    revoked: tuple[TopicPartition, ...] = ()
    raw: bytes = b""
    rejoin_needed: bool = False  # KIP-429: something was revoked, so rejoin at once


@dataclass(frozen=True)
class Rediscover:
    """The coordinator moved or is unavailable: find it again, then rejoin."""

    error: ErrorCode


@dataclass(frozen=True)
class Failed:
    """A fatal error (Java raises it to the application instead of retrying)."""

    error: ErrorCode


@dataclass(frozen=True)
class HeartbeatOk:
    pass


@dataclass(frozen=True)
class RejoinNeeded:
    error: ErrorCode


@dataclass(frozen=True)
class Ignored:
    """A stale response (sent for an older generation, or after leaving)."""

    reason: str = ""


@dataclass(frozen=True)
class Retry:
    """A transient error: send the same kind of request again after a back-off."""

    error: ErrorCode


JoinStep = SendJoin | RunAssignor | SendSync | Rediscover | Failed | Retry | Assigned
SyncStep = Assigned | SendJoin | Rediscover | Failed
HeartbeatStep = HeartbeatOk | RejoinNeeded | Rediscover | Failed | Ignored
