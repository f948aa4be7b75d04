"""Answers while the coordinator is loading its partition (spec §8.1 rule 3, §9.1 rule 2, §15 #6).

A single always-loaded emulator is never loading on its own; tests and fault injection can
switch it on with :meth:`GroupCoordinator.set_loading` to imitate a coordinator that just
moved. Java answers COORDINATOR_LOAD_IN_PROGRESS (14); Scala answers SyncGroup with
REBALANCE_IN_PROGRESS (27). Both coordinators answer Heartbeat with a blind NONE.
"""

from __future__ import annotations

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.admin_messages import (
    DeleteGroupsInput,
    DeleteGroupsResult,
    DescribedGroup,
    DescribeGroupsInput,
    DescribeGroupsResult,
    ListGroupsResult,
    Result,
)
from rebalance_lab.coordinator.classic.messages import (
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    SyncGroupResult,
)
from rebalance_lab.protocol.errors import ErrorCode

_LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def while_loading(api: str, flavor: Flavor, inp: object) -> Result:
    """The reply to ``api`` ("join", "sync", ...) while the group's partition is loading."""
    if api == "join":
        return JoinGroupResult(_LOADING)  # memberId "" and generation -1, as for NOT_COORDINATOR
    if api == "sync":
        return SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS if flavor is Flavor.KAFKA_3 else _LOADING)
    if api == "heartbeat":
        return HeartbeatResult(ErrorCode.NONE)
    if api == "leave":
        return LeaveGroupResult(_LOADING)
    if api == "describe" and isinstance(inp, DescribeGroupsInput):
        return DescribeGroupsResult(tuple(DescribedGroup(g, _LOADING, "", "", "") for g in inp.group_ids))
    if api == "delete" and isinstance(inp, DeleteGroupsInput):
        return DeleteGroupsResult(tuple((g, _LOADING) for g in dict.fromkeys(inp.group_ids)))
    return ListGroupsResult(_LOADING, ())
