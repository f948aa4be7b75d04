"""The facade: one classic group coordinator, sans-I/O (STYLE.md principle 1).

Every entry point takes ``now_ms`` (the core never reads a clock) and a ``token``, an
opaque hashable naming the caller's pending reply, and returns :class:`Effects`: the
replies produced (to this request and to *parked* JoinGroup/SyncGroup requests of other
members) and the records of every state change. Timers are keyed and fire only in
:meth:`GroupCoordinator.fire_timers`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING

from rebalance_lab.config import Flavor, GroupConfig
from rebalance_lab.coordinator.classic import heartbeat, join, leave, offsets_gate, rebalance, sync
from rebalance_lab.coordinator.classic.context import (
    Core,
    GroupTimers,
    InitialDelay,
    MemberTimeout,
    PendingSync,
    RebalanceTimeout,
    TimerKey,
    TimerKind,
    TimerPayload,
)
from rebalance_lab.coordinator.classic.messages import HeartbeatInput, JoinGroupInput, LeaveGroupInput, SyncGroupInput
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.classic.view import GroupView, group_view
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.join_race import SAMPLED
from rebalance_lab.protocol.errors import ErrorCode

_REBALANCING = frozenset({GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE})

if TYPE_CHECKING:  # conversion (and the client assignors' types it uses) is imported by the KIP-848 paths only:
    from rebalance_lab.coordinator.classic.admin_messages import (  # and these by describe (issue 22)
        DeleteGroupsInput,
        DescribeGroupsInput,
        ListedGroup,
        ListGroupsInput,
    )
    from rebalance_lab.coordinator.classic.conversion import Downgrade  # serve starts without them (issue 22)

# Imported where used, not here (issue 22): a consumer's first requests (JoinGroup, SyncGroup, Heartbeat) need
# none of describe (DescribeGroups, ListGroups, DeleteGroups), admin (operator actions), restore (--data-dir),
# loading (a loading partition, fault injection) and expiry (a pending SyncGroup's deadline), so serve's main
# thread answers its first JoinGroup without them; each imports only modules the join path has imported already.


class GroupCoordinator:
    def __init__(self, config: GroupConfig, flavor: Flavor = Flavor.KAFKA_4, *,
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self._core = Core(config, flavor, new_uuid, {}, GroupTimers())
        self._loading = False
        # The earliest timer deadline, or None: the timer queue's method itself (asked after every request)
        self.next_deadline: Callable[[], int | None] = self._core.timers.next_deadline
        # At most the earliest deadline, None only when none: what the shell arms its timer at (timers.py)
        self.deadline_bound: Callable[[], int | None] = self._core.timers.deadline_bound

    def set_loading(self, loading: bool) -> None:
        """Imitate a coordinator still loading its partition (fault injection; spec §15 #6)."""
        self._loading = loading

    def _loading_reply(self, api: str, inp: object, token: Hashable) -> Effects | None:
        if not self._loading or getattr(inp, "group_id", None) == "":
            return None  # INVALID_GROUP_ID is checked before the partition's state
        from rebalance_lab.coordinator.classic.loading import while_loading

        fx = Effects()
        fx.reply(token, while_loading(api, self._core.flavor, inp))
        return fx

    @property
    def flavor(self) -> Flavor:
        return self._core.flavor

    @property
    def config(self) -> GroupConfig:
        return self._core.config

    # -- group APIs --------------------------------------------------------------------

    def join_group(self, now_ms: int, inp: JoinGroupInput, token: Hashable) -> Effects:
        if self._loading and (busy := self._loading_reply('join', inp, token)) is not None:
            return busy
        fx = Effects()
        join.join_group(self._core, fx, now_ms, inp, token)
        return fx

    def sync_group(self, now_ms: int, inp: SyncGroupInput, token: Hashable) -> Effects:
        if self._loading and (busy := self._loading_reply('sync', inp, token)) is not None:
            return busy
        fx = Effects()
        sync.sync_group(self._core, fx, now_ms, inp, token)
        return fx

    def heartbeat(self, now_ms: int, inp: HeartbeatInput, token: Hashable) -> Effects:
        if self._loading and (busy := self._loading_reply('heartbeat', inp, token)) is not None:
            return busy
        fx = Effects()
        heartbeat.heartbeat(self._core, fx, now_ms, inp, token)
        return fx

    def leave_group(self, now_ms: int, inp: LeaveGroupInput, token: Hashable) -> Effects:
        if (busy := self._loading_reply('leave', inp, token)) is not None:
            return busy
        fx = Effects()
        leave.leave_group(self._core, fx, now_ms, inp, token)
        return fx

    def describe_groups(self, now_ms: int, inp: DescribeGroupsInput, token: Hashable) -> Effects:
        if (busy := self._loading_reply('describe', inp, token)) is not None:
            return busy
        from rebalance_lab.coordinator.classic import describe

        fx = Effects()
        describe.describe_groups(self._core, fx, inp, token)
        return fx

    def list_groups(self, now_ms: int, inp: ListGroupsInput, token: Hashable) -> Effects:
        if (busy := self._loading_reply('list', inp, token)) is not None:
            return busy
        from rebalance_lab.coordinator.classic import describe

        fx = Effects()
        describe.list_groups(self._core, fx, inp, token)
        return fx

    def listing(self, inp: ListGroupsInput) -> tuple[int, Iterator[ListedGroup]] | None:
        """How many groups a ListGroups may list, and those it lists as they are reached (read in steps by the
        handler: issue 17); None while the partition is loading (then ``list_groups`` answers)."""
        from rebalance_lab.coordinator.classic import describe

        if self._loading:
            return None
        snapshot = tuple(self._core.groups.values())
        return len(snapshot), describe.listed_groups(self._core, inp, snapshot)

    def delete_groups(self, now_ms: int, inp: DeleteGroupsInput, token: Hashable) -> Effects:
        if (busy := self._loading_reply('delete', inp, token)) is not None:
            return busy
        from rebalance_lab.coordinator.classic import describe

        fx = Effects()
        describe.delete_groups(self._core, fx, now_ms, inp, token)
        return fx

    # -- the offsets work's narrow API (spec §12) ------------------------------------------

    def validate_offset_commit(self, now_ms: int, group_id: str, member_id: str, generation_id: int,
                               group_instance_id: str | None, api_version: int,
                               transactional: bool = False) -> tuple[ErrorCode, Effects]:
        """The group-level verdict for an OffsetCommit or a TxnOffsetCommit; may create a simple group."""
        fx = Effects()
        error = offsets_gate.validate_offset_commit(self._core, fx, now_ms, group_id, member_id, generation_id,
                                                    group_instance_id, api_version, transactional)
        return error, fx

    def validate_offset_fetch(self, group_id: str) -> ErrorCode:
        return offsets_gate.validate_offset_fetch(self._core, group_id)

    def validate_offset_delete(self, group_id: str) -> offsets_gate.OffsetDeleteCheck:
        return offsets_gate.validate_offset_delete(self._core, group_id)

    def delete_empty_group(self, now_ms: int, group_id: str) -> Effects:
        """The retention sweep's end: an Empty group whose offsets are all gone is deleted (§12.4)."""
        from rebalance_lab.coordinator.classic import describe

        fx = Effects()
        group = self._core.groups.get(group_id)
        if group is not None and group.state is GroupState.EMPTY:
            describe.delete_group(self._core, fx, now_ms, group)
        return fx

    # -- online migration (KIP-848, spec/kip848.md §7) -----------------------------------------

    def group_kind(self, group_id: str) -> str | None:
        """``"empty"``, ``"non-empty"`` or None: what a consumer-protocol join finds under this id."""
        from rebalance_lab.coordinator.classic import conversion

        return conversion.group_kind(self._core, group_id)

    def export_group(self, group_id: str) -> GroupView | None:
        """The group an upgrade converts, members in iteration order (None when there is no classic group of
        this id)."""
        group = self._core.groups.get(group_id)
        return None if group is None else group_view(group)

    def convert_out(self, now_ms: int, group_id: str) -> Effects:
        """The group becomes a consumer group: an Empty one is dropped, a live one hands over (upgrade)."""
        from rebalance_lab.coordinator.classic import conversion

        fx = Effects()
        group = self._core.groups.get(group_id)
        if group is None:
            return fx
        if group.state is GroupState.EMPTY:
            conversion.remove_empty(self._core, fx, now_ms, group)
        else:
            conversion.remove_for_upgrade(self._core, fx, now_ms, group)
        return fx

    def adopt(self, now_ms: int, downgrade: Downgrade) -> Effects:
        """A consumer group's remaining classic members become this coordinator's group (downgrade)."""
        from rebalance_lab.coordinator.classic import conversion

        fx = Effects()
        conversion.adopt(self._core, fx, now_ms, downgrade)
        return fx

    # -- a data directory (serve --data-dir) --------------------------------------------------

    def load_group(self, now_ms: int, view: GroupView) -> Effects:
        """A group read back from its last stored metadata record (``restore.restore_group``)."""
        from rebalance_lab.coordinator.classic import restore

        fx = Effects()
        restore.restore_group(self._core, fx, now_ms, view)
        return fx

    # -- operator actions (fault injection, tests) ------------------------------------------

    def force_rebalance(self, now_ms: int, group_id: str, reason: str = "forced by the operator") -> Effects:
        """Start a rebalance of a Stable/CompletingRebalance group; raises ``admin.AdminError`` otherwise."""
        from rebalance_lab.coordinator.classic import admin

        fx = Effects()
        admin.force_rebalance(self._core, fx, group_id, now_ms, reason)
        return fx

    def expire_member(self, now_ms: int, group_id: str, member_id: str) -> Effects:
        """Run a member's session timeout now; raises ``admin.AdminError`` when Kafka would not expire it."""
        from rebalance_lab.coordinator.classic import admin

        fx = Effects()
        admin.expire_member(self._core, fx, group_id, member_id, now_ms)
        return fx

    @property
    def loading(self) -> bool:
        return self._loading

    # -- inspection ---------------------------------------------------------------------

    def group(self, group_id: str) -> GroupView | None:
        group = self._core.groups.get(group_id)
        return None if group is None else group_view(group)

    def rebalancing(self, group_id: str) -> int:
        """The group's members while it is between a rebalance's start and the SyncGroup of every member of the
        generation it made (its pending-sync set, KAFKA-12890: emptied by the last SyncGroup or by that set's
        timeout), else 0; 0 for a group that does not exist (deleted, or a KIP-848 group's id). O(1): serve's
        collector pause asks it when a rebalance begins and after requests while it holds (collector_pause.py)."""
        group = self._core.groups.get(group_id)
        if group is None or not (group.state in _REBALANCING or group.pending_sync):
            return 0
        return len(group.members)

    def groups(self) -> list[GroupView]:
        return [group_view(g) for g in self._core.groups.values()]

    def check_counts(self) -> None:
        """Raise when a group's kept counts differ from a scan of its members (the tests call this often)."""
        for group in self._core.groups.values():
            group.check_tally()

    # -- timers ---------------------------------------------------------------------------

    def fire_timers(self, now_ms: int) -> Effects:
        """Run every timer due at or before ``now_ms``, each at its own deadline, earliest first."""
        fx = Effects()
        timers = self._core.timers
        # join_race "sampled": a timer set by this turn's timers (the next zero initial delay) waits for the
        # next turn, as a broker's new TimerTask goes through its executor and event queue again.
        fresh_from = timers.mark() if self._core.config.join_race == SAMPLED else None
        while batch := timers.pop_next_due(now_ms, fresh_from):
            for due in batch:
                payload = timers.claim(due)
                if payload is not None:
                    self._run_timer(fx, due.key, due.at, payload)
        return fx

    def _run_timer(self, fx: Effects, key: TimerKey, at_ms: int, payload: TimerPayload) -> None:
        kind, group_id, member_id = key
        group = self._core.groups.get(group_id)
        if group is None:
            return
        if kind is TimerKind.HEARTBEAT and isinstance(payload, MemberTimeout):
            heartbeat.on_member_timeout(self._core, fx, group, member_id, at_ms)
        elif isinstance(payload, InitialDelay):
            rebalance.on_initial_delay(self._core, fx, group, at_ms, payload)
        elif isinstance(payload, RebalanceTimeout):
            rebalance.complete_join(self._core, fx, group, at_ms)
        elif isinstance(payload, PendingSync):
            from rebalance_lab.coordinator.classic.expiry import on_pending_sync_expired

            on_pending_sync_expired(self._core, fx, group, at_ms, payload.generation_id)
