"""Inputs and results of the coordinator's entry points: our own frozen values, not wire objects.

Handlers translate kafka-python requests of every version into these and the results
back into responses; wire-only rules (e.g. the v<7 / v>=7 protocol-name normalisation)
stay in the handlers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from rebalance_lab.protocol.errors import ErrorCode

INT_MIN = -(2**31)  # authorizedOperations when not requested


# The values made per JoinGroup and SyncGroup (and per member when a join or a sync completes) are NamedTuples:
# frozen like the others, but a frozen dataclass sets each field through object.__setattr__ (a JoinGroupResult
# ~5 us, a JoinGroupInput ~7 us; a NamedTuple ~1 us), which a 10,000-member rebalance pays 40,000 times (issue 22).


class ProtocolEntry(NamedTuple):
    name: str
    metadata: bytes


class JoinGroupInput(NamedTuple):
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[ProtocolEntry, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v0: the handler passes the session timeout (JoinGroupRequest)
    api_version: int = 9
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    reason: str | None = None


def client_reason(inp: JoinGroupInput) -> str:
    """``JoinGroupRequest.joinReason``: the KIP-800 client reason, or "not provided"."""
    return inp.reason if inp.reason else "not provided"


class JoinedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinGroupResult(NamedTuple):
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinedMember, ...] = ()


class SyncGroupInput(NamedTuple):
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    api_version: int = 5


class SyncGroupResult(NamedTuple):
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class HeartbeatInput(NamedTuple):
    """A frozen value like the others, but a NamedTuple: a frozen dataclass sets each field through
    object.__setattr__ (~1.5 us, a tenth of a heartbeat's core), a NamedTuple is made in ~0.3 us (issue 22)."""

    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode


@dataclass(frozen=True)
class LeaveMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class LeaveGroupInput:
    group_id: str
    members: tuple[LeaveMember, ...]
    api_version: int = 5


@dataclass(frozen=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True)
class LeaveGroupResult:
    error: ErrorCode
    members: tuple[LeaveMemberResult, ...] = ()
