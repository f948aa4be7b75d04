"""Operator entry points used by fault injection and tests: force a rebalance, expire a member now.

Both reuse the coordinator's own transitions (``prepare_rebalance`` and the session-timeout
body ``on_member_timeout``), so what follows is exactly what a real trigger would cause.
"""

from __future__ import annotations

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.heartbeat import on_member_timeout
from rebalance_lab.coordinator.classic.rebalance import cancel_heartbeat, prepare_rebalance
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects


class AdminError(Exception):
    """The group cannot do what was asked in its current state."""


class NotFound(AdminError):
    """The group or member does not exist."""


def force_rebalance(core: Core, fx: Effects, group_id: str, now_ms: int, reason: str) -> None:
    """Move a Stable or CompletingRebalance group to PreparingRebalance, as a metadata change would."""
    group = core.groups.get(group_id)
    if group is None:
        raise NotFound(f"no group {group_id!r}")
    if group.state not in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        raise AdminError(f"group {group_id!r} is {group.state.value}; only a Stable or CompletingRebalance "
                         "group can be made to rebalance")
    prepare_rebalance(core, fx, group, now_ms, reason, "forced")


def expire_member(core: Core, fx: Effects, group_id: str, member_id: str, now_ms: int) -> None:
    """Run the member's session timeout now (Java ``expireClassicGroupMemberHeartbeat``).

    A member parked in a JoinGroup or SyncGroup has a satisfied heartbeat and, as in Kafka,
    does not expire; that is reported as an error rather than ignored.
    """
    group = core.groups.get(group_id)
    if group is None:
        raise NotFound(f"no group {group_id!r}")
    member = group.members.get(member_id)
    if member is None and member_id not in group.pending_join:
        raise NotFound(f"no member {member_id!r} in group {group_id!r}")
    if member is not None and member.has_satisfied_heartbeat():
        raise AdminError(f"member {member_id!r} is waiting for a JoinGroup/SyncGroup answer; "
                         "Kafka does not expire it then")
    cancel_heartbeat(core, group, member_id)
    on_member_timeout(core, fx, group, member_id, now_ms)
