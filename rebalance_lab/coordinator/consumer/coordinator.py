"""The facade: the KIP-848 consumer group coordinator, sans-I/O (STYLE.md principle 1).

Every entry point takes ``now_ms`` and the :class:`TopicsImage` of the moment (the core never
reads a clock or the cluster) and returns :class:`Effects`: the reply to the caller's token
and the records of every state change, which are also what changed the groups
(:mod:`.apply`). An operation that fails changes nothing. Timers are keyed and fire only in
:meth:`ConsumerGroupCoordinator.fire_timers`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer import describe, heartbeat, leave, migration, regex, subscriptions
from rebalance_lab.coordinator.consumer.apply import apply
from rebalance_lab.coordinator.consumer.classic_api import ClassicMemberApis
from rebalance_lab.coordinator.consumer.context import ClassicGroupKind, Core, Pending, TimerKind, TimerPayload
from rebalance_lab.coordinator.consumer.describe import PartitionCheck
from rebalance_lab.coordinator.consumer.messages import (
    ConsumerGroupHeartbeatInput,
    DescribeInput,
    HeartbeatResult,
)
from rebalance_lab.coordinator.consumer.model import MAX_INT, ConsumerGroup
from rebalance_lab.coordinator.consumer.records import GroupDeleted, GroupEpochBumped, RegexResolved
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.coordinator.consumer.validation import validate_request
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView, group_view
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.coordinator.timers import Due
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def _no_classic_group(group_id: str) -> str | None:
    return None


class ConsumerGroupCoordinator(ClassicMemberApis):
    """``classic``: the classic coordinator, for online migration (spec §7); classic-protocol members of consumer
    groups are served by the :class:`ClassicMemberApis` entry points."""

    def __init__(self, config: ConsumerGroupConfig | None = None, new_uuid: Callable[[], uuid.UUID] = uuid.uuid4,
                 classic_group_kind: ClassicGroupKind = _no_classic_group,
                 classic: migration.ClassicPort | None = None) -> None:
        self._core = Core(config or ConsumerGroupConfig(), new_uuid, classic_group_kind, classic=classic)

    @property
    def config(self) -> ConsumerGroupConfig:
        return self._core.config

    # -- APIs ------------------------------------------------------------------------------------------------

    def validate(self, inp: ConsumerGroupHeartbeatInput) -> HeartbeatResult | None:
        """The request checks Kafka makes before routing (the handler asks first, then checks NOT_COORDINATOR)."""
        try:
            validate_request(inp, self._core.config.assignors)
        except KafkaError as exc:
            return HeartbeatResult.failed(exc.code, str(exc))
        return None

    def heartbeat(self, now_ms: int, inp: ConsumerGroupHeartbeatInput, topics: TopicsImage,
                  token: Hashable) -> Effects:
        fx = Effects()
        p = Pending(now_ms)
        try:
            validate_request(inp, self._core.config.assignors)
            if inp.member_epoch in (-1, -2):
                result = leave.leave(self._core, inp, topics, p)
            else:
                result = heartbeat.heartbeat(self._core, now_ms, inp, topics, p)
        except KafkaError as exc:
            # runtime-translated errors carry no message (CoordinatorOperationExceptionHelper)
            message = None if exc.code is ErrorCode.UNKNOWN_SERVER_ERROR else str(exc)
            fx.reply(token, HeartbeatResult.failed(exc.code, message))
            return fx
        self._commit(p, fx)
        fx.reply(token, result)
        return fx

    def describe(self, inp: DescribeInput, topics: TopicsImage, token: Hashable) -> Effects:
        fx = Effects()
        fx.reply(token, describe.describe(self._core, inp, topics))
        return fx

    def _commit(self, p: Pending, fx: Effects) -> None:
        for record in p.records:
            self._fold(record)
            fx.record(record)
        for change in p.timers:
            change()
        if self._core.classic is not None:
            fx.extend(migration.finish(self._core.classic, p.now_ms, p.records))

    def _fold(self, record: GroupRecord) -> None:
        """One record into its group (created by its first record, dropped by its deletion or downgrade)."""
        group = self._core.groups.get(record.group_id)
        if group is None:
            group = self._core.groups[record.group_id] = ConsumerGroup(record.group_id)
        apply(group, record)
        if isinstance(record, GroupDeleted | migration.GroupDowngraded):
            del self._core.groups[record.group_id]

    # -- a data directory (serve --data-dir) ----------------------------------------------------------------------

    def load(self, now_ms: int, records: Iterable[GroupRecord]) -> None:
        """Rebuild the groups from their stored records (the same fold as :meth:`_commit`), then arm the timers
        ``GroupMetadataManager.onLoaded`` arms: every member's session timeout from now, and the rebalance
        timeout of a member still revoking partitions."""
        for record in records:
            self._fold(record)
        for group in self._core.groups.values():
            for member in group.members.values():
                self._core.timers.schedule((TimerKind.SESSION, group.group_id, member.member_id),
                                           now_ms + self._core.config.session_timeout_ms, TimerPayload())
                heartbeat.rebalance_timer(self._core, group.group_id, member, now_ms)

    # -- metadata ------------------------------------------------------------------------------------------------

    def on_topics_changed(self, names: Iterable[str]) -> None:
        """``onMetadataUpdate``: groups subscribed to a changed or deleted topic refresh their metadata at their
        next heartbeat (nothing is written now)."""
        changed = set(names)
        for group in self._core.groups.values():
            if any(group.is_subscribed_to(n) for n in changed):
                group.request_metadata_refresh()

    # -- what the other group APIs ask ---------------------------------------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self._core.groups

    def group(self, group_id: str) -> ConsumerGroupView | None:
        group = self._core.groups.get(group_id)
        return None if group is None else group_view(group)

    def groups(self) -> list[ConsumerGroupView]:
        return [group_view(g) for g in self._core.groups.values()]

    def list_entries(self) -> list[tuple[str, str, str]]:
        return describe.list_entries(self._core)

    def listing(self) -> tuple[int, Iterator[tuple[str, str, str]]]:
        """How many groups a ListGroups may list, and :meth:`list_entries` of them as they are reached (read in
        steps by the handler: issue 17)."""
        snapshot = tuple(self._core.groups.values())
        return len(snapshot), describe.listed_entries(self._core, snapshot)

    def delete_group(self, now_ms: int, group_id: str) -> tuple[ErrorCode, Effects]:
        """DeleteGroups: an Empty consumer group goes (NON_EMPTY_GROUP otherwise); GROUP_ID_NOT_FOUND if none."""
        fx = Effects()
        try:
            describe.validate_delete(self._core, group_id)
        except KafkaError as exc:
            return exc.code, fx
        group = self._core.groups[group_id]
        p = Pending(now_ms)
        for regex_text in list(group.resolved_regexes):
            p.record(RegexResolved(group_id, now_ms, regex_text, None))
        p.record(GroupDeleted(group_id, now_ms, group.group_epoch))
        self._commit(p, fx)
        return ErrorCode.NONE, fx

    def validate_offset_commit(self, group_id: str, member_id: str, epoch: int, api_version: int,
                               transactional: bool = False,
                               instance_id: str | None = None) -> PartitionCheck | None:
        """Raises KafkaError for the whole request; returns a per-partition check or None (all accepted)."""
        group = self._core.groups[group_id]
        return describe.validate_offset_commit(group, member_id, epoch, api_version, transactional, instance_id)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> None:
        describe.validate_offset_fetch(self._core.groups[group_id], member_id, epoch)

    def is_subscribed_to(self, group_id: str, topic: str) -> bool:
        group = self._core.groups.get(group_id)
        return group is not None and group.is_subscribed_to(topic)

    # -- operator actions (fault injection, the toolkit) ---------------------------------------------------------

    def fence_member(self, now_ms: int, group_id: str, member_id: str, topics: TopicsImage) -> Effects:
        """Remove a member as a timeout would (its next heartbeat gets UNKNOWN_MEMBER_ID); KeyError if unknown."""
        fx = Effects()
        p = Pending(now_ms)
        if not leave.fence_operation(self._core, group_id, member_id, "the operator fenced it", "other", topics, p):
            raise KeyError(f"no member {member_id} in consumer group {group_id}")
        self._commit(p, fx)
        return fx

    def bump_epoch(self, now_ms: int, group_id: str) -> Effects:
        """Bump the group epoch: the next heartbeat of any member computes a new target assignment."""
        fx = Effects()
        group = self._core.groups[group_id]
        p = Pending(now_ms)
        p.record(GroupEpochBumped(group_id, now_ms, group.group_epoch + 1, group.metadata_hash, "operator"))
        self._commit(p, fx)
        return fx

    # -- timers ------------------------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self._core.timers.next_deadline()

    def fire_timers(self, now_ms: int, topics: TopicsImage) -> Effects:
        """Run every timer due at or before ``now_ms``, each at its own deadline, earliest first."""
        fx = Effects()
        for due in self._core.timers.pop_due(now_ms):
            p = Pending(due.at)
            self._run_timer(due, topics, p)
            self._commit(p, fx)
        return fx

    def _run_timer(self, due: Due[tuple[TimerKind, str, str], TimerPayload], topics: TopicsImage,
                   p: Pending) -> None:
        kind, group_id, member_id = due.key
        if kind is TimerKind.SESSION:
            leave.fence_operation(self._core, group_id, member_id, "the member session expired", "session_timeout",
                                  topics, p)
        elif kind is TimerKind.REBALANCE:
            group = self._core.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is not None and member.member_epoch == due.payload.epoch:
                reason = (f"it failed to transition from epoch {due.payload.epoch} within "
                          f"{due.payload.timeout_ms}ms")
                leave.fence_operation(self._core, group_id, member_id, reason, "rebalance_timeout", topics, p)
        elif kind is TimerKind.REGEX:
            self._regexes_resolved(group_id, due.payload.regexes, topics, p, due.payload.may_describe)
        elif kind in migration.CLASSIC_TIMEOUTS:
            reason, code = migration.CLASSIC_TIMEOUTS[kind]
            leave.fence_operation(self._core, group_id, member_id, reason, code, topics, p)

    def _regexes_resolved(self, group_id: str, regexes: frozenset[str], topics: TopicsImage, p: Pending,
                          may_describe: Callable[[str], bool] | None = None) -> None:
        """``handleRegularExpressionsResult``: store each still-used regex's topics; bump the epoch when a
        regex's topics or the group's metadata hash changed."""
        group = self._core.groups.get(group_id)
        if group is None:
            return
        counts = subscriptions.names_with(group, None, None)
        bump = False
        for regex_text, resolved in regex.resolve(regexes, topics, p.now_ms, may_describe).items():
            if group.num_subscribed_members(regex_text) == 0:
                continue
            old = group.resolved_regexes.get(regex_text)
            old_topics = old.topics if old is not None else frozenset()  # ResolvedRegularExpression.EMPTY
            if old_topics != resolved.topics:
                bump = True
                subscriptions.shift_regex_topics(counts, old_topics, resolved.topics)
            p.record(RegexResolved(group_id, p.now_ms, regex_text, resolved))
        hashed = subscriptions.metadata_hash(counts, topics)
        if bump or hashed != group.metadata_hash:
            epoch = group.group_epoch + 1
            p.record(GroupEpochBumped(group_id, p.now_ms, epoch, hashed, "metadata_change"))
            group.refresh_deadline = (p.now_ms + MAX_INT, epoch)
