"""Online migration between the classic and the consumer protocol (KIP-848; spec/kip848.md §7, Kafka 4.4.0).

``group.consumer.migration.policy`` (``ConsumerGroupMigrationPolicy``, case-insensitive; an unknown value
parses as ``disabled``) governs live groups only; empty groups convert either way:

* **upgrade** (``getOrMaybeCreateConsumerGroup`` -> ``validateOnlineUpgrade``, ``convertToConsumerGroup``,
  ``ConsumerGroup.fromClassicGroup``): a consumer-protocol member joins a non-empty classic group. Every
  classic member becomes a member *using the classic protocol* at epoch = the generation, Stable, its
  current and target assignment = its last classic assignment (topics unknown to the cluster dropped), its
  subscription and rack from the embedded subscription of the selected protocol. Refusals are
  GROUP_ID_NOT_FOUND with Kafka's messages (the 4.4 one about a custom assignor's user data included);
* **downgrade** (``validateOnlineDowngradeWithFencedMembers``/``...WithReplacedMember``,
  ``convertToClassicGroup``): when the members left after a removal all use the classic protocol, the
  consumer group is deleted and the classic coordinator adopts them (``classic/conversion.py``). No epoch
  bump: the generation is the group epoch as it was.

The classic coordinator is reached through :class:`ClassicPort` (the classic ``GroupCoordinator`` is one),
so the two state machines stay apart and a unit test can drive both.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from rebalance_lab.config import GroupConfig
from rebalance_lab.coordinator.classic.conversion import Downgrade, DowngradedMember, ordered_partitions
from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.coordinator.classic.view import GroupView, MemberView
from rebalance_lab.coordinator.consumer import subscriptions
from rebalance_lab.coordinator.consumer.apply import apply
from rebalance_lab.coordinator.consumer.context import Core, Pending, TimerKind, TimerPayload
from rebalance_lab.coordinator.consumer.model import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
)
from rebalance_lab.coordinator.consumer.records import (
    ConsumerRecord,
    GroupEpochBumped,
    MemberAssignmentChanged,
    MemberJoined,
    TargetAssignmentComputed,
)
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment, decode_subscription
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

DOWNGRADE_REASON = "Downgrade group {} from consumer to classic for member leaving."
STALE_DOWNGRADE_REASON = "Downgrade group {} from consumer to classic with stale assignment."
# the fence reasons of the classic-member timers (scheduleConsumerGroupJoinTimeoutIfAbsent / SyncTimeout)
CLASSIC_TIMEOUTS = {
    TimerKind.CLASSIC_JOIN: ("the classic member failed to join within the rebalance timeout", "join_timeout"),
    TimerKind.CLASSIC_SYNC: ("the member failed to sync within timeout", "sync_timeout"),
}


class ClassicPort(Protocol):
    """What the consumer side asks of the classic coordinator (``classic.coordinator.GroupCoordinator``)."""

    def group_kind(self, group_id: str) -> str | None: ...

    def export_group(self, group_id: str) -> GroupView | None: ...

    def convert_out(self, now_ms: int, group_id: str) -> Effects: ...

    def adopt(self, now_ms: int, downgrade: Downgrade) -> Effects: ...

    @property
    def config(self) -> GroupConfig: ...


@dataclass(frozen=True)
class Policy:
    """``ConsumerGroupMigrationPolicy``."""

    upgrade: bool
    downgrade: bool

    @classmethod
    def parse(cls, name: str | None) -> Policy:
        value = (name or "").lower()
        return cls(value in ("bidirectional", "upgrade"), value in ("bidirectional", "downgrade"))

    @property
    def disabled(self) -> bool:
        return not self.upgrade and not self.downgrade


@dataclass(frozen=True)
class GroupUpgraded(ConsumerRecord):
    """The consumer group came from a live classic group at its generation (its members follow as records)."""

    event_type: ClassVar[str] = "GROUP_LOADED"
    epoch: int

    def fields(self) -> dict[str, Any]:
        return {"generation": self.epoch, "protocol_type": "consumer", "reason_code": "protocol_upgrade",
                "reason_raw": "converted from a classic group"}


@dataclass(frozen=True)
class GroupDowngraded(ConsumerRecord):
    """The consumer group's tombstones: it becomes a classic group (``downgrade`` says how; None: an Empty group
    gives way to a JoinGroup, which creates the classic group itself). Offsets stay."""

    event_type: ClassVar[str] = "GROUP_DEAD"
    epoch: int
    downgrade: Downgrade | None

    def fields(self) -> dict[str, Any]:
        if self.downgrade is None:
            return {"generation": self.epoch, "protocol_type": "consumer", "reason_code": "empty_group_conversion",
                    "reason_raw": "converted to a classic group"}
        return {"generation": self.epoch, "protocol_type": "consumer", "reason_code": "protocol_downgrade",
                "reason_raw": self.downgrade.rebalance_reason or "converted to a classic group"}


# -- upgrade ----------------------------------------------------------------------------------------------------


def upgrade_group(core: Core, classic: ClassicPort, group_id: str, topics: TopicsImage, p: Pending) -> ConsumerGroup:
    """A consumer-protocol join on a live classic group: the converted group (``GroupRouting`` then converts the
    classic group out, answering its parked requests REBALANCE_IN_PROGRESS)."""
    state = classic.export_group(group_id)
    assert state is not None and state.members  # the caller saw a non-empty classic group
    return upgrade(core, state, topics, p)


def upgrade(core: Core, state: GroupView, topics: TopicsImage, p: Pending) -> ConsumerGroup:
    """``validateOnlineUpgrade`` then ``convertToConsumerGroup``: the new group, its records in ``p``."""
    gid = state.group_id
    if not Policy.parse(core.config.migration_policy).upgrade:
        raise _refused(gid, "online upgrade is disabled")
    if not state.uses_consumer_protocol:
        raise _refused(gid, "the group does not use the consumer embedded protocol")
    if len(state.members) > core.config.max_size:
        raise _refused(gid, "the group size exceeds the consumer group maximum size")
    converted = [_convert(state, m, topics) for m in state.members]
    group = ConsumerGroup(gid)
    for record in _conversion_records(state, converted, topics, p.now_ms):
        apply(group, record)
        p.record(record)
    for member in converted:
        _schedule_session(core, gid, member, p)
    return group


def _refused(group_id: str, why: str) -> KafkaError:
    return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                      f"Cannot upgrade classic group {group_id} to consumer group because {why}.")


def _convert(state: GroupView, m: MemberView, topics: TopicsImage) -> ConsumerMember:
    gen = state.generation_id
    assigned = _assigned(state.group_id, m.assignment, topics)
    metadata = state.metadata_of(m)
    if metadata is None:  # a group that never chose a protocol: Kafka's Optional.get() throws
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "No value present")
    try:
        sub = decode_subscription(metadata)
    except ConsumerProtocolError as exc:
        raise _refused(state.group_id, "the embedded consumer protocol is malformed") from exc
    return ConsumerMember(
        m.member_id, instance_id=m.group_instance_id, rack_id=sub.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=frozenset(sub.topics),
        rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=gen, previous_member_epoch=gen,
        state=MemberState.STABLE, assigned={t: {p: gen for p in ps} for t, ps in assigned.items()},
        classic_member_metadata=classic_metadata(m.session_timeout_ms, m.protocols),
    )


def _assigned(group_id: str, raw: bytes, topics: TopicsImage) -> Partitions:
    """The member's classic assignment by topic id; topics the cluster does not know are dropped."""
    if not raw:
        return {}
    try:
        assignment = decode_assignment(raw)
    except ConsumerProtocolError as exc:
        raise _refused(group_id, "the embedded consumer protocol is malformed") from exc
    if assignment.user_data:
        raise _refused(group_id, "an unsupported custom assignor is in use. Please refer to the documentation or "
                                 "switch to a default assignor before re-attempting the upgrade")
    by_topic: dict[uuid.UUID, set[int]] = {}
    for tp in assignment.partitions:
        topic = topics.get(tp.topic)
        if topic is not None:
            by_topic.setdefault(topic.topic_id, set()).add(tp.partition)
    return {t: frozenset(ps) for t, ps in by_topic.items()}


def classic_metadata(session_timeout_ms: int, protocols: Iterable[ProtocolEntry]) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(session_timeout_ms, tuple((p.name, p.metadata) for p in protocols))


def _conversion_records(state: GroupView, members: list[ConsumerMember], topics: TopicsImage,
                        now_ms: int) -> list[ConsumerRecord]:
    """``createConsumerGroupRecords``: metadata of each member, the epoch, the targets, the current assignments."""
    gid, gen = state.group_id, state.generation_id
    names = {n for m in members for n in m.subscribed_topic_names}
    targets: dict[str, Partitions] = {m.member_id: {t: frozenset(ps) for t, ps in m.assigned.items()}
                                      for m in members}
    topic_names = {t.topic_id: t.name for t in (topics.get(n) for n in topics.names()) if t is not None}
    records: list[ConsumerRecord] = [GroupUpgraded(gid, now_ms, gen)]
    records += [MemberJoined(gid, now_ms, m) for m in members]
    records.append(GroupEpochBumped(gid, now_ms, gen, subscriptions.metadata_hash(names, topics), "protocol_upgrade"))
    records.append(TargetAssignmentComputed(gid, now_ms, gen, None, None, targets, topic_names))  # "never computed"
    records += [MemberAssignmentChanged(gid, now_ms, m.member_id, gen, gen, m.state.name, m.assigned, {}, topic_names)
                for m in members]
    return records


def _schedule_session(core: Core, group_id: str, member: ConsumerMember, p: Pending) -> None:
    """Converted members keep their classic session timeout (``scheduleConsumerGroupSessionTimeout``)."""
    assert member.classic_member_metadata is not None
    at = p.now_ms + member.classic_member_metadata.session_timeout_ms
    key = (TimerKind.SESSION, group_id, member.member_id)
    p.timers.append(lambda: core.timers.schedule(key, at, TimerPayload()))


# -- downgrade --------------------------------------------------------------------------------------------------


def maybe_downgrade(core: Core, group: ConsumerGroup, leaving: Collection[ConsumerMember], topics: TopicsImage,
                    p: Pending) -> bool:
    """``validateOnlineDowngradeWithFencedMembers``; when it holds, the downgrade replaces the removal."""
    if core.classic is None or not all_classic_except(group, leaving):
        return False
    remaining = len(group.members) - len({m.member_id for m in leaving})
    policy = Policy.parse(core.config.migration_policy)
    if remaining <= 0 or not policy.downgrade or remaining > core.classic.config.max_size:
        return False
    left = {m.member_id for m in leaving}
    kept = [m for m in in_kafka_order(group) if m.member_id not in left]
    down = Downgrade(group.group_id, group.group_epoch, tuple(downgraded(group, m, m.member_id, topics) for m in kept),
                     DOWNGRADE_REASON.format(group.group_id))
    record_downgrade(core, group, down, p)
    return True


def can_downgrade_replacing(core: Core, group: ConsumerGroup, replaced: ConsumerMember) -> bool:
    """``validateOnlineDowngradeWithReplacedMember``: a classic static member takes the last consumer member's place."""
    if core.classic is None or not all_classic_except(group, [replaced]):
        return False
    return Policy.parse(core.config.migration_policy).downgrade and len(group.members) <= core.classic.config.max_size


def in_kafka_order(group: ConsumerGroup) -> list[ConsumerMember]:
    """The members as Kafka's ``TimelineHashMap`` iterates them: the classic group adds them in this order, so
    the first one becomes its leader (``ClassicGroup.fromConsumerGroup``)."""
    return [group.members[m] for m in group.member_order if m in group.members]


def all_classic_except(group: ConsumerGroup, excluded: Collection[ConsumerMember]) -> bool:
    """``allMembersUseClassicProtocolExcept``: every member but ``excluded`` speaks the classic protocol."""
    ids = {m.member_id for m in excluded}
    return all(m.uses_classic_protocol for m in group.members.values() if m.member_id not in ids)


def downgraded(group: ConsumerGroup, member: ConsumerMember, target_of: str, topics: TopicsImage) -> DowngradedMember:
    """One member of the classic group to be, with the target of ``target_of`` (the replaced member for a joiner)."""
    meta = member.classic_member_metadata
    assert meta is not None
    target = group.target.get(target_of, {})
    named = [(name, sorted(ps)) for t, ps in target.items() if (name := topics.name_of(t)) is not None]
    return DowngradedMember(member.member_id, member.instance_id, member.client_id, member.client_host,
                            meta.session_timeout_ms, member.rebalance_timeout_ms,
                            tuple(ProtocolEntry(n, md) for n, md in meta.supported_protocols),
                            ordered_partitions(named))


def record_downgrade(core: Core, group: ConsumerGroup, down: Downgrade, p: Pending) -> None:
    """The group's tombstones (one record) and every member timer stopped: Kafka's stay armed but find no
    consumer group when they fire."""
    p.record(GroupDowngraded(group.group_id, p.now_ms, group.group_epoch, down))
    gid, member_ids = group.group_id, list(group.members)

    def stop_timers() -> None:
        for member_id in member_ids:
            core.cancel_member_timers(gid, member_id)

    p.timers.append(stop_timers)


def finish(classic: ClassicPort, now_ms: int, records: Iterable[Any]) -> Effects:
    """After a committed operation: a downgraded group is adopted by the classic coordinator."""
    fx = Effects()
    for record in records:
        if isinstance(record, GroupDowngraded) and record.downgrade is not None:
            fx.extend(classic.adopt(now_ms, record.downgrade))
    return fx
