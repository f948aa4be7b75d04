"""What happened in each rebalance of a classic group, and why, as data (issue 19, item 1).

:class:`Explainer` folds the coordinator's records (``GroupService.subscribe``) into one
:class:`RebalanceStory` per rebalance: the state changes, the vote table (each member's protocols in
preference order), the candidates, the votes and the tie-break rule of the flavor, the leader (and
whether it changed), the assignment with what each member owned, got, revoked, and what was withheld
for a cooperative follow-up round. Between and inside rebalances it yields :class:`Note` values, the
reasons a reader needs (an initial delay extended, a follower's rejoin that causes no rebalance, a
static member skipping KIP-394, an old member id now fenced, a refused join, a heartbeat answered
REBALANCE_IN_PROGRESS once per member per rebalance, an operator's expire).

Both the text narrator (:mod:`.narrator`) and the live page render these values; nothing here is
text for a terminal except :attr:`Tie.rule`, the one-sentence rule a page shows too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rebalance_lab.coordinator.classic import records as r
from rebalance_lab.coordinator.classic.ordering import champ_order, java_hashmap_order
from rebalance_lab.faults.records import FaultFired, FaultInjected
from rebalance_lab.observe import decode

TP = tuple[str, int]
HISTORY = 20  # finished stories kept per group
NOTES_KEPT = 200  # notes kept per story (a client refused over and over must not grow it for ever)

#: The tie-break of each flavor, in one sentence (``{order}`` is the tied names in the vote map's order).
TIE_RULES = {
    # Kafka 4.4.0 ClassicGroup.selectProtocol: votes counted into a java.util.HashMap, then
    # entrySet().stream().max(comparingInt(getValue)); Stream.max keeps the first of equal maxima.
    "kafka-4": "kafka-4 counts votes in a java.util.HashMap and keeps the first maximum in its "
               "iteration order (hash buckets): {order}",
    # Kafka 3.9 GroupMetadata.selectProtocol: votes.groupBy(identity).maxBy(_._2.size); groupBy builds
    # an immutable.HashMap (CHAMP trie) and maxBy keeps the first of equal maxima.
    "kafka-3": "kafka-3 groups votes into a Scala immutable.HashMap and maxBy keeps the first maximum "
               "in its iteration order (CHAMP trie): {order}",
}


class NoteKind(StrEnum):
    GROUP_CREATED = "group_created"
    ASKS_TO_JOIN = "asks_to_join"  # KIP-394: MEMBER_ID_REQUIRED
    JOINED = "joined"
    REJOINED = "rejoined"
    STATIC_REPLACED = "static_replaced"
    REFUSED = "refused"
    REBALANCE = "rebalance"  # a rebalance started: the story's head
    DELAY_EXTENDED = "delay_extended"
    NOTIFIED = "notified"  # a heartbeat answered REBALANCE_IN_PROGRESS
    LEFT = "left"
    EXPIRED = "expired"
    PENDING_EXPIRED = "pending_expired"
    DROPPED = "dropped"
    GENERATION = "generation"  # the join completed: states, vote table, votes, leader
    ASSIGNED = "assigned"  # the leader's SyncGroup: the assignment and what moved
    EMPTY = "empty"
    DELETED = "deleted"
    FAULT = "fault"  # an operator's action or a fault (before its effect)


@dataclass(frozen=True)
class Note:
    """One thing to tell, in order. Which fields are set depends on ``kind``."""

    ts_ms: int
    group_id: str
    kind: NoteKind
    member_id: str | None = None
    client_id: str | None = None
    instance_id: str | None = None
    protocols: tuple[str, ...] = ()
    other_id: str | None = None  # the old id of a replaced static member; the new leader after a leave
    error: str | None = None  # an ErrorCode name
    cause: str | None = None  # a record's cause or reason code; a rejoin's change; a fault's kind
    ms: int | None = None  # a delay, a session timeout
    flag: bool = False  # became leader (joined); a rebalance follows (rejoined, replaced); by the operator (expired)
    members: tuple[str, ...] = ()
    group_protocols: tuple[str, ...] = ()  # what the group offers (a refused join)
    detail: tuple[tuple[str, Any], ...] = ()  # a fault's parameters


@dataclass
class StateChange:
    ts_ms: int
    before: str
    after: str


@dataclass
class Ballot:
    """One row of the vote table."""

    member_id: str
    client_id: str
    instance_id: str | None
    protocols: tuple[str, ...]  # in the member's preference order
    vote: str | None = None
    owned: frozenset[TP] = frozenset()  # as its subscription (of the selected protocol) says


@dataclass(frozen=True)
class Tie:
    tied: tuple[str, ...]  # the tied names, in the vote map's iteration order (the first wins)
    flavor: str

    @property
    def rule(self) -> str:
        return TIE_RULES.get(self.flavor, "{order}").format(order=" > ".join(self.tied))


@dataclass
class Share:
    """One member's row of the assignment: what it owned (cooperative), had before, and got."""

    member_id: str
    assigned: frozenset[TP]
    owned: frozenset[TP]  # the subscription's owned partitions (empty for an eager assignor)
    before: frozenset[TP]  # its assignment in the previous generation

    @property
    def revoked(self) -> frozenset[TP]:
        return self.owned - self.assigned

    @property
    def gained(self) -> frozenset[TP]:
        return self.assigned - self.before

    @property
    def lost(self) -> frozenset[TP]:
        return self.before - self.assigned


@dataclass
class RebalanceStory:
    """One rebalance of a classic group, from its start to the leader's assignment."""

    group_id: str
    flavor: str
    started_ms: int
    generation_before: int
    reason: str
    reason_code: str
    from_state: str
    initial_delay_ms: int | None = None
    extensions_ms: list[int] = field(default_factory=list)
    round: int = 1  # 2: the follow-up round of a cooperative rebalance
    states: list[StateChange] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    notified: list[str] = field(default_factory=list)  # members told by a heartbeat, in order
    generation: int | None = None  # the generation formed
    candidates: tuple[str, ...] = ()
    ballots: list[Ballot] = field(default_factory=list)
    tally: tuple[tuple[str, int], ...] = ()  # most votes first
    winner: str | None = None
    tie: Tie | None = None
    leader_id: str | None = None
    previous_leader_id: str | None = None
    shares: list[Share] = field(default_factory=list)
    withheld: frozenset[TP] = frozenset()
    moved: frozenset[TP] = frozenset()  # partitions whose holder changed since the previous generation
    released: frozenset[TP] = frozenset()  # partitions the previous round withheld, given out now
    completed_ms: int | None = None

    @property
    def leader_unchanged(self) -> bool:
        return self.leader_id is not None and self.leader_id == self.previous_leader_id

    def to_dict(self) -> dict[str, Any]:
        """The story as JSON values (partitions as ``[topic, partition]`` pairs, sorted)."""
        def tps(values: Iterable[TP]) -> list[list[Any]]:
            return [[t, p] for t, p in sorted(values)]

        return {
            "group_id": self.group_id, "flavor": self.flavor, "started_ms": self.started_ms,
            "generation_before": self.generation_before, "generation": self.generation, "round": self.round,
            "reason": self.reason, "reason_code": self.reason_code, "from_state": self.from_state,
            "initial_delay_ms": self.initial_delay_ms, "extensions_ms": list(self.extensions_ms),
            "states": [{"ts_ms": s.ts_ms, "from": s.before, "to": s.after} for s in self.states],
            "notified": list(self.notified), "candidates": list(self.candidates),
            "ballots": [{"member_id": b.member_id, "client_id": b.client_id, "instance_id": b.instance_id,
                         "protocols": list(b.protocols), "vote": b.vote, "owned": tps(b.owned)}
                        for b in self.ballots],
            "tally": [[n, c] for n, c in self.tally], "winner": self.winner,
            "tie": None if self.tie is None else {"tied": list(self.tie.tied), "rule": self.tie.rule},
            "leader_id": self.leader_id, "previous_leader_id": self.previous_leader_id,
            "leader_unchanged": self.leader_unchanged,
            "shares": [{"member_id": s.member_id, "owned": tps(s.owned), "before": tps(s.before),
                        "assigned": tps(s.assigned), "revoked": tps(s.revoked), "gained": tps(s.gained)}
                       for s in self.shares],
            "withheld": tps(self.withheld), "moved": tps(self.moved), "released": tps(self.released),
            "completed_ms": self.completed_ms,
        }


@dataclass
class _Member:
    client_id: str
    instance_id: str | None
    protocols: tuple[tuple[str, bytes], ...]


@dataclass
class GroupStories:
    """What the explainer knows of one group: its members, leader, state, current and past stories."""

    group_id: str
    flavor: str
    state: str = "Empty"
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None  # the leader now (a join or a leave may change it during a rebalance)
    generation_leader: str | None = None  # the leader the last generation was formed with
    members: dict[str, _Member] = field(default_factory=dict)
    assignment: dict[str, frozenset[TP]] = field(default_factory=dict)  # the last generation's
    current: RebalanceStory | None = None
    history: deque[RebalanceStory] = field(default_factory=lambda: deque(maxlen=HISTORY))
    pending_withheld: frozenset[TP] = frozenset()  # withheld by the last generation: a second round is due
    operator_expires: set[str] = field(default_factory=set)  # members the operator is expiring now
    operator_removed: bool = False  # the last removal was the operator's: the rebalance it starts is too

    def stories(self) -> list[RebalanceStory]:
        """Finished stories, oldest first, then the one under way."""
        return [*self.history, *([self.current] if self.current else [])]


Told = tuple[Note, RebalanceStory | None]


class Explainer:
    """Feed every record with :meth:`on_record`; it returns the notes to tell, each with its story."""

    def __init__(self, flavor: str) -> None:
        self.flavor = flavor
        self.groups: dict[str, GroupStories] = {}

    def group(self, group_id: str) -> GroupStories:
        found = self.groups.get(group_id)
        if found is None:
            found = self.groups[group_id] = GroupStories(group_id, self.flavor)
        return found

    def on_record(self, record: r.GroupRecord) -> list[Told]:
        handler = _HANDLERS.get(type(record))
        if handler is None:
            return []
        g = self.group(record.group_id)
        told = handler(g, record)
        story = g.current
        for note, _ in told:
            if story is not None and note.kind is not NoteKind.REBALANCE and len(story.notes) < NOTES_KEPT:
                story.notes.append(note)
        if isinstance(record, r.GroupDeleted | r.GroupUpgraded):
            self.groups.pop(record.group_id, None)  # a deleted group's stories go with it (memory stays bounded)
        return told


# -- membership ------------------------------------------------------------------------------------------------

def _created(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    g.state = "Empty"
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.GROUP_CREATED), None)]


def _pending(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.PendingMemberAdded)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.ASKS_TO_JOIN, rec.member_id, rec.client_id,
                  protocols=rec.protocols), g.current)]


def _joined(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.MemberJoined)
    g.protocol_type = rec.protocol_type
    g.members[rec.member_id] = _Member(rec.client_id, rec.group_instance_id, rec.protocols)
    if rec.became_leader:
        g.leader_id = rec.member_id
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.JOINED, rec.member_id, rec.client_id, rec.group_instance_id,
                  tuple(n for n, _ in rec.protocols), ms=rec.session_timeout_ms, flag=rec.became_leader), g.current)]


def _rejoined(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.MemberRejoined)
    known = g.members.get(rec.member_id)
    change = _change(known.protocols if known else None, rec.protocols, g.protocol_type) \
        if rec.metadata_changed else None
    if known is not None:
        known.protocols = rec.protocols
    # GroupMetadataManager.classicGroupJoinExistingMember: in Stable only the leader or a changed member
    # rebalances; in CompletingRebalance only a changed member; in PreparingRebalance it joins the round.
    leader = rec.member_id == g.leader_id
    rebalances = (rec.state == "Stable" and (leader or change is not None)) or \
        (rec.state == "CompletingRebalance" and change is not None)
    cause = change if change is not None else ("leader" if leader and rec.state == "Stable" else None)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.REJOINED, rec.member_id, protocols=_names(rec.protocols),
                  cause=cause, flag=rebalances, other_id=rec.state), g.current)]


def _change(before: tuple[tuple[str, bytes], ...] | None, after: tuple[tuple[str, bytes], ...],
            protocol_type: str | None) -> str:
    """What changed in a member's JoinGroup: its protocols, or inside the same protocols' subscription."""
    if before is None or _names(before) != _names(after):
        return "protocols"
    old = decode.subscription(before[0][1], protocol_type)
    new = decode.subscription(after[0][1], protocol_type)
    if old is None or new is None:
        return "metadata"
    if sorted(old["topics"]) != sorted(new["topics"]):
        return "subscription"
    if _owned(old) != _owned(new):
        return "owned partitions"
    return "metadata"


def _names(protocols: tuple[tuple[str, bytes], ...]) -> tuple[str, ...]:
    return tuple(n for n, _ in protocols)


def _owned(sub: dict[str, Any] | None) -> frozenset[TP]:
    if not sub:
        return frozenset()
    return frozenset((tp["topic"], tp["partition"]) for tp in sub["owned"])


def _replaced(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.StaticMemberReplaced)
    old = g.members.pop(rec.old_member_id, None)
    same = old is not None and _names(old.protocols) == _names(rec.protocols)
    g.members[rec.new_member_id] = _Member(old.client_id if old else "", rec.group_instance_id, rec.protocols)
    if rec.old_member_id in g.assignment:
        g.assignment[rec.new_member_id] = g.assignment.pop(rec.old_member_id)
    if g.leader_id == rec.old_member_id:
        g.leader_id = rec.new_member_id
    if g.generation_leader == rec.old_member_id:
        g.generation_leader = rec.new_member_id
    # GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin: in Stable the new id takes the old
    # one's place and assignment; only a change of the selected protocol rebalances. Elsewhere it rejoins.
    quiet = g.state == "Stable" and same
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.STATIC_REPLACED, rec.new_member_id,
                  instance_id=rec.group_instance_id, protocols=_names(rec.protocols), other_id=rec.old_member_id,
                  cause=g.state, flag=not quiet), g.current)]


def _refused(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.JoinRefused)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.REFUSED, rec.member_id or None, rec.client_id,
                  rec.group_instance_id, rec.protocols, error=rec.error, cause=rec.state,
                  group_protocols=rec.group_protocols), g.current)]


def _left(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.MemberRemoved)
    before = g.leader_id
    g.members.pop(rec.member_id, None)
    g.leader_id = rec.new_leader_id
    new_leader = rec.new_leader_id if before == rec.member_id else None
    operator = rec.member_id in g.operator_expires
    g.operator_expires.discard(rec.member_id)
    g.operator_removed = operator
    kind = NoteKind.EXPIRED if isinstance(rec, r.MemberExpired) else NoteKind.LEFT
    return [(Note(rec.ts_ms, rec.group_id, kind, rec.member_id, instance_id=rec.group_instance_id,
                  cause=rec.cause, other_id=new_leader, flag=operator), g.current)]


def _pending_expired(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.PendingMemberExpired)
    operator = rec.member_id in g.operator_expires
    g.operator_expires.discard(rec.member_id)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.PENDING_EXPIRED, rec.member_id, cause=rec.cause,
                  flag=operator), g.current)]


def _dropped(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.MembersDroppedNotRejoined)
    for member_id in rec.member_ids:
        g.members.pop(member_id, None)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.DROPPED, members=rec.member_ids), g.current)]


def _notified(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.RebalanceNotified)
    if g.current is not None:
        if rec.member_id in g.current.notified:
            return []
        g.current.notified.append(rec.member_id)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.NOTIFIED, rec.member_id), g.current)]


def _fault(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, FaultInjected)
    detail = dict(rec.detail)
    if rec.kind == "expire_member" and isinstance(detail.get("member_id"), str):
        g.operator_expires.add(detail["member_id"])
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.FAULT, cause=rec.kind, detail=rec.detail,
                  flag=isinstance(rec, FaultFired)), g.current)]


# -- the rebalance ---------------------------------------------------------------------------------------------

def _rebalance(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.RebalancePrepared)
    code = "operator_expire" if g.operator_removed and rec.reason_code == "session_timeout" else rec.reason_code
    g.operator_removed = False
    story = RebalanceStory(rec.group_id, g.flavor, rec.ts_ms, rec.generation, rec.reason, code,
                           rec.from_state, rec.initial_delay_ms, previous_leader_id=g.generation_leader)
    # A cooperative assignor withholds what it revoked; the members that revoked rejoin at once and the
    # follow-up round gives those partitions out (ConsumerCoordinator.onJoinComplete, KIP-429).
    story.round = 2 if g.pending_withheld else 1
    _finish(g)
    g.current = story
    _move(g, story, rec.ts_ms, "PreparingRebalance")
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.REBALANCE, cause=rec.reason_code, ms=rec.initial_delay_ms),
             story)]


def _extended(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.InitialDelayExtended)
    if g.current is not None:
        g.current.extensions_ms.append(rec.delay_ms)
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.DELAY_EXTENDED, ms=rec.delay_ms), g.current)]


def _generation(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.GenerationStarted)
    story = g.current
    if story is None:  # a join completed without a start we saw (a recording tailed mid-rebalance)
        story = g.current = RebalanceStory(rec.group_id, g.flavor, rec.ts_ms, rec.generation - 1, "", "",
                                           g.state, previous_leader_id=g.generation_leader)
    g.protocol_type, g.protocol, g.leader_id = rec.protocol_type, rec.protocol, rec.leader_id
    g.generation_leader = rec.leader_id
    g.operator_removed = False
    votes = dict(rec.votes)
    story.generation, story.candidates, story.winner, story.leader_id = (
        rec.generation, rec.candidates, rec.protocol, rec.leader_id)
    story.ballots = [_ballot(g, member_id, instance_id, votes.get(member_id), rec.protocol)
                     for member_id, instance_id in rec.members]
    story.tally, story.tie = _tally(g.flavor, [v for _, v in rec.votes])
    _move(g, story, rec.ts_ms, "CompletingRebalance")
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.GENERATION), story)]


def _ballot(g: GroupStories, member_id: str, instance_id: str | None, vote: str | None, winner: str) -> Ballot:
    member = g.members.get(member_id)
    if member is None:
        return Ballot(member_id, "", instance_id, (), vote)
    metadata = dict(member.protocols).get(winner, b"")
    owned = _owned(decode.subscription(metadata, g.protocol_type))
    return Ballot(member_id, member.client_id, instance_id, _names(member.protocols), vote, owned)


def _tally(flavor: str, votes: list[str]) -> tuple[tuple[tuple[str, int], ...], Tie | None]:
    counts: dict[str, int] = {}
    for vote in votes:
        counts[vote] = counts.get(vote, 0) + 1
    order = champ_order(counts) if flavor == "kafka-3" else java_hashmap_order(votes)
    tally = tuple(sorted(((n, counts[n]) for n in order), key=lambda nc: -nc[1]))  # stable: map order in a tie
    top = max(counts.values(), default=0)
    tied = tuple(n for n in order if counts[n] == top)
    return tally, Tie(tied, flavor) if len(tied) > 1 else None


def _assigned(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.AssignmentStored)
    story = g.current
    if story is None or story.generation != rec.generation:
        return []
    owned = {b.member_id: b.owned for b in story.ballots}
    story.shares = [Share(m, _tps(data, g.protocol_type), owned.get(m, frozenset()), g.assignment.get(m, frozenset()))
                    for m, data in rec.assignments]
    given = frozenset().union(*(s.assigned for s in story.shares))
    story.withheld = frozenset().union(*(s.revoked for s in story.shares)) - given
    story.released = g.pending_withheld & given
    g.pending_withheld = story.withheld
    story.moved = _moved(g.assignment, story.shares)
    g.assignment = {s.member_id: s.assigned for s in story.shares}
    story.completed_ms = rec.ts_ms
    _move(g, story, rec.ts_ms, "Stable")
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.ASSIGNED), story)]


def _moved(before: dict[str, frozenset[TP]], shares: list[Share]) -> frozenset[TP]:
    """Partitions held in the previous generation by a member that does not hold them now (a member that left
    counts: its partitions moved to someone, or are withheld)."""
    holder = {tp: m for m, tps in before.items() for tp in tps}
    now = {tp: s.member_id for s in shares for tp in s.assigned}
    return frozenset(tp for tp, m in holder.items() if now.get(tp) != m)


def _tps(data: bytes, protocol_type: str | None) -> frozenset[TP]:
    decoded = decode.assignment(data, protocol_type)
    return frozenset((tp["topic"], tp["partition"]) for tp in decoded or [])


def _empty(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    assert isinstance(rec, r.GroupEmpty)
    story = g.current
    if story is not None:
        story.generation = rec.generation
        story.completed_ms = rec.ts_ms
        _move(g, story, rec.ts_ms, "Empty")
    g.assignment, g.pending_withheld, g.leader_id, g.generation_leader = {}, frozenset(), None, None
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.EMPTY, ms=rec.generation), story)]


def _deleted(g: GroupStories, rec: r.GroupRecord) -> list[Told]:
    _finish(g)
    g.state = "Dead"
    return [(Note(rec.ts_ms, rec.group_id, NoteKind.DELETED), None)]


def _move(g: GroupStories, story: RebalanceStory, ts_ms: int, state: str) -> None:
    if g.state != state:
        story.states.append(StateChange(ts_ms, g.state, state))
        g.state = state


def _finish(g: GroupStories) -> None:
    if g.current is not None:
        g.history.append(g.current)
        g.current = None


_HANDLERS: dict[type, Callable[[GroupStories, r.GroupRecord], list[Told]]] = {
    r.GroupCreated: _created,
    r.PendingMemberAdded: _pending,
    r.MemberJoined: _joined,
    r.MemberRejoined: _rejoined,
    r.StaticMemberReplaced: _replaced,
    r.JoinRefused: _refused,
    r.RebalancePrepared: _rebalance,
    r.InitialDelayExtended: _extended,
    r.RebalanceNotified: _notified,
    r.MemberLeft: _left,
    r.MemberExpired: _left,
    r.PendingMemberExpired: _pending_expired,
    r.MembersDroppedNotRejoined: _dropped,
    r.GenerationStarted: _generation,
    r.AssignmentStored: _assigned,
    r.GroupEmpty: _empty,
    r.GroupDeleted: _deleted,
    FaultInjected: _fault,
    FaultFired: _fault,
}
