"""The classic coordinator's DescribeGroups, ListGroups and DeleteGroups inputs and results (messages.py's kind).

Kept apart from messages.py, which the join path imports: a consumer's first requests make none of these nine
classes (~6 M instructions of serve's start to its first JoinGroup, issue 22); describe.py and the three handlers
import them on the first of those requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_lab.coordinator.classic.messages import (
    INT_MIN,
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    SyncGroupResult,
)
from rebalance_lab.protocol.errors import ErrorCode


@dataclass(frozen=True)
class DescribeGroupsInput:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False
    api_version: int = 5


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...] = ()
    authorized_operations: int = INT_MIN
    error_message: str | None = None


@dataclass(frozen=True)
class DescribeGroupsResult:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True)
class ListGroupsInput:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True)
class ListGroupsResult:
    error: ErrorCode
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True)
class DeleteGroupsInput:
    group_ids: tuple[str, ...]


@dataclass(frozen=True)
class DeleteGroupsResult:
    results: tuple[tuple[str, ErrorCode], ...]


Result = (
    JoinGroupResult | SyncGroupResult | HeartbeatResult | LeaveGroupResult | DescribeGroupsResult
    | ListGroupsResult | DeleteGroupsResult
)
