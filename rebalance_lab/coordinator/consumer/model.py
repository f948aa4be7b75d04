"""The KIP-848 consumer group and its members (Kafka 4.4.0 ``ConsumerGroup``/``ConsumerGroupMember``).

A member is a frozen value; the group holds the members and the indexes Kafka's
``ConsumerGroup`` keeps beside them (static members, subscribed topic counts, server
assignor counts, partition epochs, the target assignment and its inverse). Only
:mod:`.apply` changes a group, by folding records (STYLE.md principle 2); the heartbeat
computes with the group as it was before the request, as Kafka does (its records are
replayed after the operation).

Assignments are ``topic id -> partition -> assignment epoch`` (KIP-1251, in 4.4.0: the
epoch at which each partition was given to the member; OffsetCommit checks it).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import TypedDict, Unpack

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, string_hash
from rebalance_lab.coordinator.consumer.assignors.java_order import TimelineKeyOrder

Partitions = Mapping[uuid.UUID, frozenset[int]]  # a target assignment
EpochMap = Mapping[uuid.UUID, Mapping[int, int]]  # assigned partitions with their assignment epochs
NO_PARTITIONS: Mapping[uuid.UUID, frozenset[int]] = {}
TEMPORARY_LEAVE_EPOCH = -2
MAX_INT = 2_147_483_647


class MemberState(Enum):
    """``MemberState`` with its record byte."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState(StrEnum):
    """``ConsumerGroup.ConsumerGroupState``; the value is the wire string."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """A member that speaks JoinGroup/SyncGroup inside a consumer group (online migration, spec §7)."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class ConsumerMember:
    """``ConsumerGroupMember`` (defaults of its ``Builder(memberId)``)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""  # "" = none
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: EpochMap = field(default_factory=dict)
    pending_revocation: EpochMap = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def metadata(self) -> tuple[object, ...]:
        """The fields of the member-metadata record (everything but the assignment state)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.server_assignor, self.rebalance_timeout_ms,
                self.classic_member_metadata)


class MemberChanges(TypedDict, total=False):
    """The fields :func:`evolve` may change (every field of :class:`ConsumerMember`)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: frozenset[str]
    subscribed_topic_regex: str
    server_assignor: str | None
    rebalance_timeout_ms: int
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: EpochMap
    pending_revocation: EpochMap
    classic_member_metadata: ClassicMemberMetadata | None


def evolve(member: ConsumerMember, **changes: Unpack[MemberChanges]) -> ConsumerMember:
    """``dataclasses.replace`` for a member, without re-running the frozen ``__init__`` (which sets each of the
    15 fields through ``object.__setattr__``): 2 us instead of 8, and a join makes four copies. The class has
    no ``__post_init__`` and every field is copied, so the result equals what ``replace`` builds."""
    new = object.__new__(ConsumerMember)
    state = new.__dict__
    state.update(member.__dict__)
    state.update(changes)
    return new


@dataclass
class SubscriptionCount:
    """``SubscriptionCount``: members subscribing to a topic by name, and resolved regexes naming it."""

    by_name: int = 0
    by_regex: int = 0


@dataclass(frozen=True)
class ResolvedRegex:
    """``ResolvedRegularExpression``: the topics a regex matched, the image version and when."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


@dataclass
class ConsumerGroup:
    group_id: str
    # 4.4.0: a new group starts at epoch 1 with target-assignment metadata (1, never computed)
    # (ModernGroup's constructor; TargetAssignmentMetadata.INITIAL), so its first member gets epoch 2
    group_epoch: int = 1
    assignment_epoch: int = 1
    assignment_timestamp_ms: int | None = None  # Kafka's 0: never computed, or reset when the group emptied
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    member_order: TimelineKeyOrder = field(default_factory=TimelineKeyOrder)  # Kafka's TimelineHashMap order
    target: dict[str, Partitions] = field(default_factory=dict)
    inverted_target: dict[uuid.UUID, dict[int, str]] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    subscribed_names: dict[str, SubscriptionCount] = field(default_factory=dict)
    subscribed_regexes: dict[str, int] = field(default_factory=dict)  # regex -> members using it
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    server_assignors: dict[str, int] = field(default_factory=dict)
    assignor_order: TimelineKeyOrder = field(default_factory=TimelineKeyOrder)  # serverAssignors' TimelineHashMap
    partition_epochs: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)
    metadata_hash: tuple[object, ...] = ()  # KIP-1101: what the hash covers; () hashes to 0 in Kafka
    refresh_deadline: tuple[int, int] = (0, 0)  # (deadline ms, epoch); (0, 0) = refresh at the next heartbeat

    # -- reads (ConsumerGroup / ModernGroup) -------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        """``maybeUpdateGroupState``, derived on every read."""
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def target_of(self, member_id: str, instance_id: str | None = None) -> Partitions:
        """``targetAssignment(memberId, instanceId)``: a static member by its instance's current member id."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            return self.target.get(previous, NO_PARTITIONS) if previous is not None else NO_PARTITIONS
        return self.target.get(member_id, NO_PARTITIONS)

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """``currentPartitionEpoch``: the epoch of the member holding it, -1 when free."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regexes.get(regex, 0)

    def preferred_assignor(self, old: ConsumerMember | None = None, new: ConsumerMember | None = None) -> str | None:
        """The most requested assignor; a tie goes to the first in iteration order (``Stream.max`` keeps the
        first). With no member given it is ``preferredServerAssignor()``, over the group's ``TimelineHashMap``;
        with one it is ``computePreferredServerAssignor``, over the ``java.util.HashMap`` Kafka copies the counts
        into. The two orders can disagree on a tie, and then (4.4.0) a plain heartbeat bumps the epoch."""
        if old is None and new is None:
            return _first_max(self.server_assignors, list(self.assignor_order))
        counts = _copied_counts(self.server_assignors, list(self.assignor_order))
        _compute(counts, old.server_assignor if old else None, -1)
        _compute(counts, new.server_assignor if new else None, 1)
        return _first_max(dict(counts.items()), list(counts.keys()))

    def last_regex_refresh_ms(self) -> int | None:
        """``lastResolvedRegularExpressionRefreshTimeMs`` (None: Long.MIN_VALUE, never resolved)."""
        return max((r.timestamp_ms for r in self.resolved_regexes.values()), default=None)

    def last_regex_version(self) -> int:
        return max((r.version for r in self.resolved_regexes.values()), default=0)

    def has_metadata_expired(self, now_ms: int) -> bool:
        deadline, epoch = self.refresh_deadline
        return now_ms >= deadline or self.group_epoch < epoch

    def request_metadata_refresh(self) -> None:
        self.refresh_deadline = (0, 0)

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_names


def _copied_counts(counts: Mapping[str, int], order: list[str]) -> JavaHashMap[str, int]:
    """``new HashMap<>(timelineMap)``: sized for the source (``putMapEntries``), filled in its order."""
    copy: JavaHashMap[str, int] = JavaHashMap(string_hash, math.ceil(len(order) / 0.75) if order else None)
    for name in order:
        copy.put(name, counts[name])
    return copy


def _compute(counts: JavaHashMap[str, int], name: str | None, delta: int) -> None:
    """``HashMap.compute(name, Utils::incValue/decValue)``: a count reaching 0 is removed; a new key goes to the
    *head* of its bucket (unlike ``put``), which is what makes a tie come out differently."""
    if name is None:
        return
    value = (counts.get(name) or 0) + delta
    if value <= 0:
        counts.remove(name)
    elif name in counts:
        counts.put(name, value)
    else:
        counts.compute_if_absent(name, lambda _: value)


def _first_max(counts: Mapping[str, int], order: list[str]) -> str | None:
    best: str | None = None
    for name in order:
        if best is None or counts[name] > counts[best]:
            best = name
    return best


def _count(counts: dict[str, int], name: str | None, delta: int) -> None:
    """``Utils.incValue``/``decValue``: a count that reaches zero disappears."""
    if name is None:
        return
    value = counts.get(name, 0) + delta
    if value <= 0:
        counts.pop(name, None)
    else:
        counts[name] = value


def count(counts: dict[str, int], name: str | None, delta: int) -> None:
    _count(counts, name, delta)
