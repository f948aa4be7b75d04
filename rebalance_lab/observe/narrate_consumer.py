"""``--explain`` for KIP-848 consumer groups: why each epoch bumped, the target, and what each member must do.

A consumer group has no join round to narrate. The coordinator bumps the group epoch (a member
joined, left, changed its subscription, was fenced; the subscribed topics' metadata changed),
computes the target assignment of that epoch, and each member then reconciles on its own
heartbeats (Kafka 4.4.0 ``CurrentAssignmentBuilder``): it first revokes what the target takes
from it (``UNREVOKED_PARTITIONS``, still at its old epoch), then moves to the target epoch and
receives what the others have released (``UNRELEASED_PARTITIONS`` while some are still held).

The records carry only what changed (a target record names the members whose target changed,
a state record one member), so :class:`ConsumerNarration` keeps, per group, the merged target
and what each member holds, to say who still holds the partitions a member waits for.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from rebalance_lab.coordinator.consumer import migration
from rebalance_lab.coordinator.consumer import records as c
from rebalance_lab.coordinator.consumer.model import TEMPORARY_LEAVE_EPOCH
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.observe.narrate_classic import tps_text as tps_text  # one wording of partition lists

TP = tuple[str, int]
_UUID = r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
_FULL_UUID = re.compile("^" + _UUID)
_UUID_TAIL = re.compile("-" + _UUID)

#: Why the epoch bumped, by the record's reason code (``GroupEpochBumped.reason``); ``{m}`` is the member.
BUMP_REASONS = {
    "member_join": "member {m} joined",
    "member_metadata_change": "member {m} changed its subscription",
    "member_leave": "member {m} left",
    "session_timeout": "member {m} was fenced: its session expired",
    "rebalance_timeout": "member {m} was fenced: it did not revoke within its rebalance timeout",
    "join_timeout": "classic member {m} was fenced: it did not rejoin within its rebalance timeout",
    "sync_timeout": "classic member {m} was fenced: it did not sync in time",
    "other": "member {m} was fenced by the operator",
    "metadata_change": "the subscribed topics' metadata changed (partitions, topics created or deleted, regex matches)",
    "operator": "the operator bumped it (fault injection)",
    "protocol_upgrade": "the classic group became a consumer group (online upgrade)",
}


def short_member(member_id: str | None) -> str:
    """A member id as narrated: a full UUID by its first 8 hex digits, ``<client>-<uuid>`` as the classic narration."""
    if not member_id:
        return "-"
    match = _FULL_UUID.match(member_id)
    if match:
        return match.group(1)
    tail = _UUID_TAIL.search(member_id)  # a classic member inside the group: as the classic narration shortens
    return member_id[: tail.start()] + "-" + tail.group(1) if tail else member_id


def named(partitions: Mapping[uuid.UUID, Iterable[int]], names: Mapping[uuid.UUID, str]) -> frozenset[TP]:
    return frozenset((names.get(t, str(t)), p) for t, ps in partitions.items() for p in ps)


@dataclass
class _Group:
    epoch: int = 1
    target: dict[str, frozenset[TP]] = field(default_factory=dict)
    held: dict[str, frozenset[TP]] = field(default_factory=dict)  # assigned or pending revocation
    states: dict[str, str] = field(default_factory=dict)
    said: dict[str, str] = field(default_factory=dict)  # each member's last state line (a repeat is not told)
    members: set[str] = field(default_factory=set)


class ConsumerNarration:
    """Turns one consumer-group record into narration lines (none for a record with nothing to tell)."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._handlers: dict[type, Callable[[_Group, GroupRecord], list[str]]] = {
            c.GroupCreated: lambda g, r: ["consumer group created (KIP-848, group.protocol=consumer) at epoch 1"],
            c.MemberJoined: self._joined,
            c.MemberMetadataUpdated: self._updated,
            c.StaticMemberReplaced: self._replaced,
            c.GroupEpochBumped: self._bumped,
            c.TargetAssignmentComputed: self._target,
            c.MemberAssignmentChanged: self._state,
            c.MemberLeft: self._left,
            c.MemberFenced: self._fenced,
            c.RegexResolved: self._regex,
            c.GroupDeleted: lambda g, r: ["consumer group deleted"],
            migration.GroupUpgraded: self._upgraded,
            migration.GroupDowngraded: self._downgraded,
        }

    def describe(self, record: GroupRecord) -> list[str]:
        handler = self._handlers.get(type(record))
        if handler is None:
            return []
        group = self._groups.setdefault(record.group_id, _Group())
        lines = handler(group, record)
        if isinstance(record, c.GroupDeleted | migration.GroupDowngraded):
            self._groups.pop(record.group_id, None)
        return lines

    # -- membership ----------------------------------------------------------------------------------------------

    def _joined(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.MemberJoined)
        m = rec.member
        g.members.add(m.member_id)
        static = f", static instance {m.instance_id}" if m.instance_id else ""
        protocol = "classic protocol inside the consumer group" if m.uses_classic_protocol else "consumer protocol"
        assignor = f", asks for the {m.server_assignor} assignor" if m.server_assignor else ""
        return [f"member {short_member(m.member_id)} joined (client {m.client_id or '-'}{static}, {protocol}) "
                f"subscribing to {_subscription(m.subscribed_topic_names, m.subscribed_topic_regex)}{assignor}"]

    def _updated(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.MemberMetadataUpdated)
        m = rec.member
        return [f"member {short_member(m.member_id)} updated its metadata: subscribes to "
                f"{_subscription(m.subscribed_topic_names, m.subscribed_topic_regex)}"
                + (f", rack {m.rack_id}" if m.rack_id else "")]

    def _replaced(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.StaticMemberReplaced)
        new, old = rec.member.member_id, rec.old_member_id
        if old in g.target:
            g.target[new] = g.target.pop(old)
        if old in g.held:
            g.held[new] = g.held.pop(old)
        if old in g.states:
            g.states[new] = g.states.pop(old)
        g.members.discard(old)
        g.members.add(new)
        return [f"static instance {rec.member.instance_id} came back as member {short_member(new)}, replacing "
                f"{short_member(old)}: it takes over its target and partitions, no epoch bump"]

    def _left(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.MemberLeft)
        if rec.temporary:
            return [f"static member {short_member(rec.member_id)} (instance {rec.instance_id}) left temporarily "
                    "(epoch -2): its assignment is kept for it until its session expires; no epoch bump"]
        self._forget(g, rec.member_id)
        return [f"member {short_member(rec.member_id)} left the group (epoch -1); its partitions are free"]

    def _fenced(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.MemberFenced)
        self._forget(g, rec.member_id)
        return [f"member {short_member(rec.member_id)} fenced from the group because {rec.reason} "
                f"({rec.reason_code}); its partitions are free and its next heartbeat gets UNKNOWN_MEMBER_ID"]

    @staticmethod
    def _forget(g: _Group, member_id: str) -> None:
        for table in (g.target, g.held, g.states, g.said):
            table.pop(member_id, None)
        g.members.discard(member_id)

    # -- epochs and targets ------------------------------------------------------------------------------------------

    def _bumped(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.GroupEpochBumped)
        why = BUMP_REASONS.get(rec.reason, rec.reason).format(m=short_member(rec.member_id))
        before, g.epoch = g.epoch, rec.epoch
        then = "a new target assignment is due" if g.members else "the group is empty"
        return [f"group epoch {before} -> {rec.epoch}: {why}; {then}"]

    def _target(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.TargetAssignmentComputed)
        if rec.assignor is None:
            g.target.clear()
            return [f"target assignment of epoch {rec.epoch} reset: the group is empty"]
        for member_id, partitions in rec.targets.items():
            g.target[member_id] = named(partitions, rec.topic_names)
        head = f"target assignment of epoch {rec.epoch} ({rec.assignor} assignor)"
        if not rec.targets:
            return [f"{head}: no member's target changed"]
        parts = [f"{short_member(m)} gets {tps_text(g.target[m])}" for m in rec.targets]
        return [f"{head}: " + "; ".join(parts)]

    def _state(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.MemberAssignmentChanged)
        if rec.epoch == TEMPORARY_LEAVE_EPOCH:
            return []  # a static member away: its leave line said it all
        assigned = named(rec.assigned, rec.topic_names)
        pending = named(rec.pending_revocation, rec.topic_names)
        before = g.states.get(rec.member_id)
        g.states[rec.member_id] = rec.state
        g.held[rec.member_id] = assigned | pending
        who = short_member(rec.member_id)
        change = f"{before} -> {rec.state}" if before and before != rec.state else rec.state
        if rec.state == "UNREVOKED_PARTITIONS":
            return self._once(g, rec.member_id, f"member {who} ({change}, epoch {rec.epoch}) must revoke "
                              f"{tps_text(pending)} before it gets more; it keeps {tps_text(assigned)}")
        line = f"member {who} ({change}) at epoch {rec.epoch} owns {tps_text(assigned)}"
        unreleased = g.target.get(rec.member_id, frozenset()) - assigned
        if rec.state == "UNRELEASED_PARTITIONS" and unreleased:
            holders = sorted({short_member(m) for m, tps in g.held.items() if m != rec.member_id and tps & unreleased})
            by = f", still held by {', '.join(holders)}" if holders else ""
            line += f"; waits for {tps_text(unreleased)}{by}"
        return self._once(g, rec.member_id, line)

    @staticmethod
    def _once(g: _Group, member_id: str, line: str) -> list[str]:
        """A state record that tells nothing new (the same state, epoch and partitions) is not narrated again."""
        if g.said.get(member_id) == line:
            return []
        g.said[member_id] = line
        return [line]

    def _regex(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, c.RegexResolved)
        if rec.resolved is None:
            return [f"regex {rec.regex!r} is no longer used by any member"]
        topics = ", ".join(sorted(rec.resolved.topics)) or "no topic"
        return [f"regex {rec.regex!r} resolved: it matches {topics}"]

    # -- migration -----------------------------------------------------------------------------------------------

    def _upgraded(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, migration.GroupUpgraded)
        g.epoch = rec.epoch
        return [f"the classic group becomes a consumer group at epoch {rec.epoch} (online upgrade)"]

    def _downgraded(self, g: _Group, rec: GroupRecord) -> list[str]:
        assert isinstance(rec, migration.GroupDowngraded)
        how = "its last consumer-protocol member left" if rec.downgrade is not None else "it was empty"
        return [f"the consumer group becomes a classic group ({how}; online downgrade)"]


def _subscription(names: Iterable[str], regex: str) -> str:
    if regex:
        return f"regex {regex!r}"
    listed = sorted(names)
    return f"[{', '.join(listed)}]" if listed else "nothing"
