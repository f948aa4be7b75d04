"""A classic group read back from a data directory (``serve --data-dir``), as Kafka loads one.

Kafka writes a group's metadata record when a generation's assignment is stored (Stable) and when
the group becomes Empty; loading it (``ClassicGroup.fromRecord``) gives back that generation, its
protocol, leader, members (static and dynamic) and assignments, in Stable (Empty without members).
``GroupMetadataManager.onLoaded`` then re-arms every member's heartbeat timer for a full session
timeout from the load, and a group over ``group.max.size`` is sent into a rebalance.
"""

from __future__ import annotations

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.rebalance import prepare_rebalance, schedule_heartbeat
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.classic.view import GroupView, MemberView
from rebalance_lab.coordinator.effects import Effects


def restore_group(core: Core, fx: Effects, now_ms: int, view: GroupView) -> None:
    group = Group(view.group_id, core.flavor, view.state_timestamp_ms,
                  state=GroupState.STABLE if view.members else GroupState.EMPTY,
                  protocol_type=view.protocol_type, protocol_name=view.protocol_name,
                  generation_id=view.generation_id)
    for m in view.members:
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                         m.session_timeout_ms, m.protocol_type, m.protocols, m.assignment))
    group.leader_id = view.leader_id if view.members else None
    group.protocol_type = view.protocol_type
    core.groups[group.group_id] = group
    for member in group.members.values():
        schedule_heartbeat(core, group, member.member_id, now_ms, member.session_timeout_ms)
    if len(group.members) > core.config.max_size:
        prepare_rebalance(core, fx, group, now_ms, f"Freshly-loaded group {group.group_id} (size "
                          f"{len(group.members)}) is over capacity {core.config.max_size}. Rebalancing in order to "
                          "give a chance for consumers to commit offsets", "over_capacity")


def persisted(view: GroupView) -> GroupView | None:
    """What Kafka's group metadata record holds of a group, or None between records (a rebalance in
    progress keeps the last record: the previous generation)."""
    if view.state not in (GroupState.STABLE.value, GroupState.EMPTY.value):
        return None
    members = tuple(MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                                m.rebalance_timeout_ms, m.protocol_type, m.protocols, m.assignment, False, False,
                               False) for m in view.members)
    return GroupView(view.group_id, view.state, "", view.state_timestamp_ms, view.generation_id,
                     view.protocol_type, view.protocol_name, view.leader_id, members, (), ())
