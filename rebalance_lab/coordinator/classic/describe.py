"""DescribeGroups, ListGroups and DeleteGroups (spec §11)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.admin_messages import (
    DeleteGroupsInput,
    DeleteGroupsResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsInput,
    DescribeGroupsResult,
    ListedGroup,
    ListGroupsInput,
    ListGroupsResult,
)
from rebalance_lab.coordinator.classic.context import Core, heartbeat_key, join_key, sync_key
from rebalance_lab.coordinator.classic.messages import INT_MIN
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.records import GroupDeleted
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

# Bit field of every GROUP operation when no authorizer is configured (AclEntry):
# READ(3), DELETE(6), DESCRIBE(8); 4.0 adds DESCRIBE_CONFIGS(10) and ALTER_CONFIGS(11).
_ALL_GROUP_OPERATIONS = {Flavor.KAFKA_4: 3400, Flavor.KAFKA_3: 328}


def describe_groups(core: Core, fx: Effects, inp: DescribeGroupsInput, token: Hashable) -> None:
    ops = _ALL_GROUP_OPERATIONS[core.flavor] if inp.include_authorized_operations else INT_MIN
    fx.reply(token, DescribeGroupsResult(tuple(_describe_one(core, gid, inp.api_version, ops)
                                               for gid in inp.group_ids)))


def _describe_one(core: Core, group_id: str, api_version: int, ops: int) -> DescribedGroup:
    group = core.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        if api_version >= 6 and core.java:
            # KIP-1043 (4.0+). The real 4.4.0 broker answers state "Dead" and no authorized
            # operations (INT_MIN) even when they were asked for.
            return DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, GroupState.DEAD.value, "", "", (), INT_MIN,
                                  f"Group {group_id} not found.")
        return DescribedGroup(group_id, ErrorCode.NONE, GroupState.DEAD.value, "", "", (), ops)
    stable = group.state is GroupState.STABLE
    members = tuple(_describe_member(core, group, m, stable) for m in group.members.values())
    return DescribedGroup(group_id, ErrorCode.NONE, group.state.value, group.protocol_type or "",
                          (group.protocol_name or "") if stable else "", members, ops)


def _describe_member(core: Core, group: Group, m: Member, stable: bool) -> DescribedMember:
    if stable:
        return DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               m.metadata_for(group.protocol_name), m.assignment)
    # Not Stable: no metadata; Java shows the stored assignment, Scala none (spec §15 #5).
    assignment = m.assignment if core.java else b""
    return DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", assignment)


def list_groups(core: Core, fx: Effects, inp: ListGroupsInput, token: Hashable) -> None:
    fx.reply(token, ListGroupsResult(ErrorCode.NONE, tuple(listed_groups(core, inp, tuple(core.groups.values())))))


def listed_groups(core: Core, inp: ListGroupsInput, snapshot: tuple[Group, ...]) -> Iterator[ListedGroup]:
    """The groups of ``snapshot`` (the table's groups when the listing began) still in the table, as each is
    reached: ListGroups over 200,000 groups is read in steps by its handler (issue 17; Kafka too lists each
    offsets partition on its own, ``GroupCoordinatorService.listGroups``, never the whole table at once)."""
    # Java lower-cases and trims each state filter value; Scala only lower-cases (§11.2).
    states = {(s.strip() if core.java else s).lower() for s in inp.states_filter}
    if inp.types_filter and "classic" not in {t.lower() for t in inp.types_filter}:
        return
    kept = {state: state.value for state in GroupState if not states or state.filter_name in states}
    for g in snapshot:
        if g.state in kept and core.groups.get(g.group_id) is g:
            yield ListedGroup(g.group_id, g.protocol_type or "", kept[g.state], "classic")


def delete_groups(core: Core, fx: Effects, now_ms: int, inp: DeleteGroupsInput, token: Hashable) -> None:
    results = tuple((gid, _delete_one(core, fx, now_ms, gid)) for gid in dict.fromkeys(inp.group_ids))
    fx.reply(token, DeleteGroupsResult(results))


def _delete_one(core: Core, fx: Effects, now_ms: int, group_id: str) -> ErrorCode:
    group = core.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.state is not GroupState.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP
    delete_group(core, fx, now_ms, group)
    return ErrorCode.NONE


def delete_group(core: Core, fx: Effects, now_ms: int, group: Group) -> None:
    """Remove an Empty group (its offsets go too: subscribers see :class:`GroupDeleted`)."""
    group.transition_to(GroupState.DEAD, now_ms)
    for member_id in list(group.pending_join):
        core.timers.cancel(heartbeat_key(group.group_id, member_id))
    core.timers.cancel(join_key(group.group_id))
    core.timers.cancel(sync_key(group.group_id))
    del core.groups[group.group_id]
    fx.record(GroupDeleted(group.group_id, now_ms, group.generation_id))
