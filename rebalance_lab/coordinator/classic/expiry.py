"""The pending-sync timeout (KAFKA-12890; spec §8.3): ``GMM.expirePendingSync``."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.ordering import java_hashmap_order
from rebalance_lab.coordinator.classic.rebalance import cancel_heartbeat, prepare_rebalance
from rebalance_lab.coordinator.classic.records import MemberLeft
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects


def on_pending_sync_expired(core: Core, fx: Effects, group: Group, now_ms: int, generation_id: int) -> None:
    """Remove every member that has not synced this generation (static ones too), then rebalance.

    Heartbeats do not count as a sync (GMMT testRebalanceTimesOutWhenSyncRequestIsNotReceived*).
    """
    if generation_id != group.generation_id or not group.pending_sync:
        return
    if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        return
    # Java iterates a HashSet copy. The order cannot change the outcome (a removed leader hands
    # over to the first remaining key), only the reason text, which lists the set in HashSet order.
    unsynced = java_hashmap_order(m for m in group.members if m in group.pending_sync)
    unsynced += sorted(group.pending_sync.difference(unsynced))  # ids that are no longer members
    for member_id in unsynced:
        member = group.remove(member_id)
        cancel_heartbeat(core, group, member_id)
        if member is not None:
            fx.record(MemberLeft(group.group_id, now_ms, member_id, member.group_instance_id, "sync_timeout",
                                 group.leader_id))
    reason = f"Removing [{', '.join(unsynced)}] on pending sync request expiration"
    prepare_rebalance(core, fx, group, now_ms, reason, "sync_timeout")
