"""What each group epoch of a KIP-848 consumer group did, as data (issue 19, item 1, for consumer groups).

A consumer group has no join round: the coordinator bumps the group epoch, computes that epoch's
target assignment, and the members reconcile towards it on their own heartbeats. One
:class:`EpochStory` per epoch holds why it bumped, the group state changes (Kafka 4.4.0
``ConsumerGroup.maybeUpdateGroupState``: Empty with no members, Assigning while the group epoch is
ahead of the target's, Reconciling while a member is not STABLE at the target epoch, else Stable),
the target per member, each member's state changes, what each had to revoke, and when the epoch
was reconciled. :class:`ConsumerExplainer` folds consumer-group records into them; the narrator adds
the state lines and the closing block, the live page can render the same values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.coordinator.consumer import records as c
from rebalance_lab.coordinator.consumer.model import TEMPORARY_LEAVE_EPOCH
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.observe.narrate_consumer import TP, named

HISTORY = 20


@dataclass
class MemberStep:
    ts_ms: int
    member_id: str
    state: str
    epoch: int
    assigned: frozenset[TP]
    revoking: frozenset[TP]


@dataclass
class EpochStory:
    group_id: str
    epoch: int
    started_ms: int
    reason: str
    member_id: str | None
    states: list[tuple[int, str, str]] = field(default_factory=list)  # (ts, from, to) of the group state
    assignor: str | None = None
    target: dict[str, frozenset[TP]] = field(default_factory=dict)  # every member's target of this epoch
    before: dict[str, frozenset[TP]] = field(default_factory=dict)  # what each member held when it bumped
    steps: list[MemberStep] = field(default_factory=list)
    revoked: dict[str, frozenset[TP]] = field(default_factory=dict)  # what each member was told to revoke
    reconciled_ms: int | None = None

    @property
    def moved(self) -> frozenset[TP]:
        holder = {tp: m for m, tps in self.before.items() for tp in tps}
        now = {tp: m for m, tps in self.target.items() for tp in tps}
        return frozenset(tp for tp, m in holder.items() if now.get(tp) != m)

    def to_dict(self) -> dict[str, Any]:
        def tps(values: Iterable[TP]) -> list[list[Any]]:
            return [[t, p] for t, p in sorted(values)]

        return {
            "group_id": self.group_id, "epoch": self.epoch, "started_ms": self.started_ms, "reason": self.reason,
            "member_id": self.member_id, "assignor": self.assignor,
            "states": [{"ts_ms": ts, "from": a, "to": b} for ts, a, b in self.states],
            "target": {m: tps(t) for m, t in self.target.items()},
            "before": {m: tps(t) for m, t in self.before.items()},
            "revoked": {m: tps(t) for m, t in self.revoked.items()},
            "steps": [{"ts_ms": s.ts_ms, "member_id": s.member_id, "state": s.state, "epoch": s.epoch,
                       "assigned": tps(s.assigned), "revoking": tps(s.revoking)} for s in self.steps],
            "moved": tps(self.moved), "reconciled_ms": self.reconciled_ms,
        }


@dataclass
class _Member:
    epoch: int = 0
    state: str = "STABLE"
    held: frozenset[TP] = frozenset()


@dataclass
class ConsumerStories:
    group_id: str
    state: str = "Empty"
    group_epoch: int = 0
    target_epoch: int = 0
    target: dict[str, frozenset[TP]] = field(default_factory=dict)
    members: dict[str, _Member] = field(default_factory=dict)
    current: EpochStory | None = None
    history: deque[EpochStory] = field(default_factory=lambda: deque(maxlen=HISTORY))

    def stories(self) -> list[EpochStory]:
        return [*self.history, *([self.current] if self.current else [])]

    def derived_state(self) -> str:
        """``ConsumerGroup.maybeUpdateGroupState`` (Kafka 4.4.0)."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.target_epoch:
            return "Assigning"
        if any(m.epoch != self.target_epoch or m.state != "STABLE" for m in self.members.values()):
            return "Reconciling"
        return "Stable"


@dataclass(frozen=True)
class Change:
    """What a record changed that the per-record narration does not say: the group state, a reconciled epoch."""

    before: str
    after: str
    reconciled: EpochStory | None = None


class ConsumerExplainer:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerStories] = {}

    def group(self, group_id: str) -> ConsumerStories:
        found = self.groups.get(group_id)
        if found is None:
            found = self.groups[group_id] = ConsumerStories(group_id)
        return found

    def on_record(self, record: GroupRecord) -> Change | None:
        g = self.group(record.group_id)
        if isinstance(record, c.GroupDeleted):
            self.groups.pop(record.group_id, None)
            return None
        _fold(g, record)
        if isinstance(record, _FIRST_OF_A_STEP):
            return None  # the epoch bump that follows in the same step decides the state, not this record
        before, g.state = g.state, g.derived_state()
        story = g.current
        if before == g.state:
            return None
        if story is not None:
            story.states.append((record.ts_ms, before, g.state))
        done = None
        if g.state == "Stable" and story is not None and story.reconciled_ms is None:
            story.reconciled_ms = record.ts_ms
            done = story
        return Change(before, g.state, done)


# Records a heartbeat writes before its epoch bump (GroupMetadataManager writes them in one batch): a state
# computed right after them would be one no reader of the group ever sees.
_FIRST_OF_A_STEP = (c.GroupCreated, c.MemberJoined, c.StaticMemberReplaced, c.RegexResolved)


def _fold(g: ConsumerStories, rec: GroupRecord) -> None:
    if isinstance(rec, c.MemberJoined) and not isinstance(rec, c.MemberMetadataUpdated):
        g.members.setdefault(rec.member.member_id, _Member())
    elif isinstance(rec, c.StaticMemberReplaced):
        old = g.members.pop(rec.old_member_id, _Member())
        g.members[rec.member.member_id] = old
        if rec.old_member_id in g.target:
            g.target[rec.member.member_id] = g.target.pop(rec.old_member_id)
    elif isinstance(rec, c.MemberLeft | c.MemberFenced):
        if not (isinstance(rec, c.MemberLeft) and rec.temporary):
            g.members.pop(rec.member_id, None)
            g.target.pop(rec.member_id, None)
    elif isinstance(rec, c.GroupEpochBumped):
        _bumped(g, rec)
    elif isinstance(rec, c.TargetAssignmentComputed):
        _target(g, rec)
    elif isinstance(rec, c.MemberAssignmentChanged) and rec.epoch != TEMPORARY_LEAVE_EPOCH:
        _member_state(g, rec)


def _bumped(g: ConsumerStories, rec: c.GroupEpochBumped) -> None:
    g.group_epoch = rec.epoch
    if g.current is not None:
        g.history.append(g.current)
    g.current = EpochStory(rec.group_id, rec.epoch, rec.ts_ms, rec.reason, rec.member_id,
                           before={m: s.held for m, s in g.members.items()})


def _target(g: ConsumerStories, rec: c.TargetAssignmentComputed) -> None:
    g.target_epoch = rec.epoch
    if rec.assignor is None:
        g.target.clear()
    for member_id, partitions in rec.targets.items():
        g.target[member_id] = named(partitions, rec.topic_names)
    story = g.current
    if story is not None and story.epoch == rec.epoch:
        story.assignor = rec.assignor
        story.target = {m: g.target.get(m, frozenset()) for m in g.members}


def _member_state(g: ConsumerStories, rec: c.MemberAssignmentChanged) -> None:
    member = g.members.setdefault(rec.member_id, _Member())
    assigned = named(rec.assigned, rec.topic_names)
    revoking = named(rec.pending_revocation, rec.topic_names)
    member.epoch, member.state, member.held = rec.epoch, rec.state, assigned | revoking
    story = g.current
    if story is None:
        return
    story.steps.append(MemberStep(rec.ts_ms, rec.member_id, rec.state, rec.epoch, assigned, revoking))
    if revoking:
        story.revoked[rec.member_id] = story.revoked.get(rec.member_id, frozenset()) | revoking
