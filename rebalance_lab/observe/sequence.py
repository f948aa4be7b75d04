"""Sequence-diagram model of a group's rebalances, built from ``rbl-event/1`` rows (docs/event-schema.md).

One :class:`GroupSequence` per group: its generations (a classic group's generations, a KIP-848 consumer
group's group epochs), each with lanes (the coordinator first, then the members in the order they appear)
and steps in recording order: :class:`Message` arrows (a request to the coordinator or its answer) and
:class:`Note` boxes (a rebalance starting, a vote, a session expiring).

A generation's diagram is the rebalance that formed it: the rows that caused it (a join, a rejoin, a
leave, an expiry written after the previous generation settled) move into it, so "generation 3" starts
with the member that left generation 2. Rows after the last generation settled stay in it.

The recording has one row per coordinator step, not per request, so some arrows are inferred from the
rows and marked ``inferred``: a follower's SyncGroup (only the leader's is recorded), the Heartbeat answered
REBALANCE_IN_PROGRESS through which a member of the previous generation learnt of the rebalance before it
rejoined (Kafka's ``GroupCoordinator.handleHeartbeat``; it may equally have been a SyncGroup or OffsetCommit
answered so), and the JoinGroup and SyncGroup answers, drawn when the rows that complete them are written.

Feed rows with :meth:`SequenceBuilder.add` (live, as a recorder writes them, or from a recording file with
:func:`build`); :meth:`GroupSequence.to_dict` is the JSON form for a web page. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

COORDINATOR = "coordinator"
CLASSIC, CONSUMER = "classic", "consumer"
# Rows that start a new generation's diagram, and rows after which the generation is settled (what follows
# them is the cause of the next generation, until one starts).
_STARTS = frozenset({"REBALANCE_PREPARE", "K848_EPOCH_BUMP", "GROUP_LOADED"})
_SETTLES = frozenset({"JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT", "GENERATION_SNAPSHOT", "GROUP_EMPTY",
                      "K848_TARGET_COMPUTED", "K848_MEMBER_STATE"})
_CAUSES = frozenset({"MEMBER_JOIN_REQUEST", "MEMBER_JOINED", "MEMBER_LEFT", "MEMBER_SESSION_EXPIRED",
                     "PENDING_MEMBER_EXPIRED", "K848_MEMBER_LEFT", "K848_MEMBER_FENCED", "FAULT_INJECTED"})
_UUID_TAIL = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_UUIDS = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


@dataclass(frozen=True)
class Lane:
    key: str  # the member id, or COORDINATOR
    label: str  # what a diagram prints: client or instance id with the member id's first 8 hex digits


@dataclass(frozen=True)
class Message:
    seq: int
    ts: str
    sender: str  # lane keys
    receiver: str
    api: str  # JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat
    text: str
    reply: bool = False  # an answer (drawn dashed)
    inferred: bool = False  # not a row of its own in the recording (see the module docstring)


@dataclass(frozen=True)
class Note:
    seq: int
    ts: str
    over: tuple[str, ...]  # lane keys
    text: str


Step = Message | Note


@dataclass
class Generation:
    number: int
    lanes: list[Lane] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    protocol: str | None = None
    leader: str | None = None  # a member id (classic)

    def lane(self, key: str, label: str) -> None:
        if all(existing.key != key for existing in self.lanes):
            self.lanes.append(Lane(key, label))

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.number, "protocol": self.protocol, "leader": self.leader,
            "lanes": [{"key": lane.key, "label": lane.label} for lane in self.lanes],
            "steps": [_step_dict(step) for step in self.steps],
        }


@dataclass
class GroupSequence:
    group_id: str
    kind: str  # CLASSIC or CONSUMER
    generations: list[Generation] = field(default_factory=list)

    def generation(self, number: int) -> Generation | None:
        return next((g for g in self.generations if g.number == number), None)

    def last(self) -> Generation | None:
        return self.generations[-1] if self.generations else None

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "kind": self.kind,
                "generations": [g.to_dict() for g in self.generations if g.steps]}


def _step_dict(step: Step) -> dict[str, Any]:
    if isinstance(step, Note):
        return {"type": "note", "seq": step.seq, "ts": step.ts, "over": list(step.over), "text": step.text}
    return {"type": "message", "seq": step.seq, "ts": step.ts, "from": step.sender, "to": step.receiver,
            "api": step.api, "text": step.text, "reply": step.reply, "inferred": step.inferred}


def short(member_id: str | None) -> str:
    """``<client id>-<uuid>`` as ``<client id>-<first 8 hex>``; other ids unchanged."""
    if not member_id:
        return "-"
    match = _UUID_TAIL.search(member_id)
    return member_id[: match.start()] + "-" + match.group(1) if match else member_id


def _partitions(tps: Any) -> str:
    if not isinstance(tps, list):
        return "?"
    if not tps:
        return "nothing"
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(str(tp.get("topic")), []).append(int(tp.get("partition", -1)))
    return " ".join(f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in by_topic.items())


class _GroupState:
    """What one group's rows have told so far: members, the open generation, the rows awaiting the next."""

    def __init__(self, sequence: GroupSequence) -> None:
        self.sequence = sequence
        self.labels: dict[str, str] = {}
        self.members: list[str] = []  # member ids in the group, in join order
        self.before_rebalance: set[str] = set()  # members when the open rebalance started
        self.rejoined: set[str] = set()  # members that sent a JoinGroup since it started
        self.open = False  # a classic rebalance is under way (PreparingRebalance)
        self.notified: set[str] = set()  # members whose REBALANCE_IN_PROGRESS heartbeat answer is recorded
        self.current = Generation(0)
        self.tail: list[tuple[Mapping[str, Any], list[Step]]] = []  # rows after the generation settled

    def label(self, member_id: str) -> str:
        return self.labels.get(member_id) or short(member_id)


class SequenceBuilder:
    """Rows in, one :class:`GroupSequence` per group out (``sequences``), updated row by row."""

    def __init__(self) -> None:
        self.sequences: dict[str, GroupSequence] = {}
        self._states: dict[str, _GroupState] = {}

    def add(self, row: Mapping[str, Any]) -> None:
        group_id, event = row.get("group_id"), row.get("event_type")
        if not isinstance(group_id, str) or not isinstance(event, str):
            return  # topic metadata, transactions, cluster-wide faults
        state = self._state(group_id, str(row.get("group_kind") or CLASSIC))
        if event in _STARTS:
            self._start(state, row)
        steps = _steps(state, row)
        cause = _is_cause(row)
        if state.tail or cause:
            state.tail.append((row, steps))
        else:
            self._place(state, steps)
        if event in _SETTLES and not cause:
            self._flush_tail(state)

    def _state(self, group_id: str, kind: str) -> _GroupState:
        state = self._states.get(group_id)
        if state is None:
            sequence = GroupSequence(group_id, kind)
            sequence.generations.append(Generation(0))
            self.sequences[group_id] = sequence
            state = self._states[group_id] = _GroupState(sequence)
            state.current = sequence.generations[0]
        elif kind != state.sequence.kind and kind == CONSUMER:
            state.sequence.kind = CONSUMER  # an online upgrade: the same group id carries on
        return state

    def _start(self, state: _GroupState, row: Mapping[str, Any]) -> None:
        """A new generation: it takes the rows that caused it from the previous one's tail."""
        number = int(row.get("generation") or 0)
        generation = Generation(number)
        state.sequence.generations.append(generation)
        state.current = generation
        state.before_rebalance = set(state.members)
        state.rejoined, state.notified = set(), set()
        tail, state.tail = state.tail, []
        for _, steps in tail:
            self._place(state, steps)

    def _flush_tail(self, state: _GroupState) -> None:
        tail, state.tail = state.tail, []
        for _, steps in tail:
            self._place(state, steps)

    def _place(self, state: _GroupState, steps: list[Step]) -> None:
        generation = state.current
        generation.lane(COORDINATOR, COORDINATOR)
        for step in steps:
            keys = step.over if isinstance(step, Note) else (step.sender, step.receiver)
            for key in keys:
                generation.lane(key, COORDINATOR if key == COORDINATOR else state.label(key))
            generation.steps.append(step)

    def finish(self) -> dict[str, GroupSequence]:
        """Every group's sequence with rows still awaiting a next generation kept in the last one."""
        for state in self._states.values():
            self._flush_tail(state)
            state.sequence.generations = [g for g in state.sequence.generations if g.steps]
        return self.sequences


def _is_cause(row: Mapping[str, Any]) -> bool:
    """Rows that usually start the next rebalance: written into the open generation only once it begins."""
    if row.get("reason_code") == "group_created":
        return True  # the group's creation belongs to its first generation
    return str(row.get("event_type")) in _CAUSES


def build(rows: Iterable[Mapping[str, Any]]) -> dict[str, GroupSequence]:
    """Every group's sequence from recording rows (in ``seq`` order)."""
    builder = SequenceBuilder()
    for row in rows:
        builder.add(row)
    return builder.finish()


# -- rows to steps: one rule per event type -------------------------------------------------------------


def _steps(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    rule = _RULES.get(str(row.get("event_type")))
    return rule(state, row) if rule else []


def _seq(row: Mapping[str, Any]) -> tuple[int, str]:
    return int(row.get("seq") or 0), str(row.get("ts") or "")


def _member(state: _GroupState, row: Mapping[str, Any]) -> str:
    member_id = str(row.get("member_id") or "")
    if member_id not in state.labels:
        name = row.get("group_instance_id") or row.get("client_id")
        tail = _UUID_TAIL.search(member_id)
        state.labels[member_id] = f"{name}-{tail.group(1)}" if name and tail else (str(name or "") or short(member_id))
    return member_id


def _add(state: _GroupState, member_id: str) -> None:
    if member_id not in state.members:
        state.members.append(member_id)


def _remove(state: _GroupState, member_id: str) -> None:
    if member_id in state.members:
        state.members.remove(member_id)


def _offers(row: Mapping[str, Any]) -> str:
    return "[" + ", ".join(map(str, row.get("supported_protocols") or ())) + "]"


def _join_request(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    if row.get("reason_code") == "member_id_required":  # KIP-394: the first JoinGroup of a v4+ member
        return [Message(seq, ts, member, COORDINATOR, "JoinGroup", f"JoinGroup member_id='' {_offers(row)}"),
                Message(seq, ts, COORDINATOR, member, "JoinGroup", "MEMBER_ID_REQUIRED (KIP-394)", reply=True)]
    steps: list[Step] = []
    if state.open and member in state.before_rebalance and member not in state.rejoined | state.notified:
        steps += [Message(seq, ts, member, COORDINATOR, "Heartbeat", "Heartbeat", inferred=True),
                  Message(seq, ts, COORDINATOR, member, "Heartbeat", "REBALANCE_IN_PROGRESS", reply=True,
                          inferred=True)]
    state.rejoined.add(member)
    changed = " (changed)" if row.get("reason_code") == "member_metadata_change" else ""
    return [*steps, Message(seq, ts, member, COORDINATOR, "JoinGroup", f"JoinGroup {_offers(row)}{changed}")]


def _refused(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row) if row.get("member_id") else f"refused:{row.get('client_id')}"
    state.labels.setdefault(member, str(row.get("client_id") or "?"))
    group = f" (the group offers [{row['raw'].replace(',', ', ')}])" if row.get("raw") else ""
    return [Message(seq, ts, member, COORDINATOR, "JoinGroup", f"JoinGroup {_offers(row)}"),
            Message(seq, ts, COORDINATOR, member, "JoinGroup", f"{row.get('reason_code')}{group}", reply=True)]


def _notified(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    state.notified.add(member)
    return [Message(seq, ts, member, COORDINATOR, "Heartbeat", "Heartbeat"),
            Message(seq, ts, COORDINATOR, member, "Heartbeat", "REBALANCE_IN_PROGRESS", reply=True)]


def _delay_extended(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), str(row.get("reason_raw") or "initial delay extended"))]


def _joined(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    known = member in state.members
    _add(state, member)
    state.rejoined.add(member)
    if row.get("group_kind") == CONSUMER:
        topics = ", ".join((row.get("subscription") or {}).get("topics") or ())
        epoch = "metadata change" if known else "epoch 0"
        return [Message(seq, ts, member, COORDINATOR, "ConsumerGroupHeartbeat",
                        f"ConsumerGroupHeartbeat {epoch}, topics [{topics}]")]
    static = f" instance {row['group_instance_id']}" if row.get("group_instance_id") else ""
    return [Message(seq, ts, member, COORDINATOR, "JoinGroup", f"JoinGroup{static} {_offers(row)}")]


def _replaced(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    old = str(row.get("raw") or "").removeprefix("replaced ")
    _remove(state, old)
    _add(state, member)
    api = "ConsumerGroupHeartbeat" if row.get("group_kind") == CONSUMER else "JoinGroup"
    text = f"{api} instance {row.get('group_instance_id')} member_id=''"
    return [Message(seq, ts, member, COORDINATOR, api, text),
            Note(seq, ts, (COORDINATOR,), f"static member replaced: {short(old)} is fenced")]


def _prepare(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.open = True
    reason = _UUIDS.sub(r"-\1", str(row.get("reason_raw") or row.get("reason_code") or ""))
    return [Note(seq, ts, (COORDINATOR,), f"PreparingRebalance for generation {row.get('generation')}: {reason}")]


def _join_complete(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.open = False
    generation, leader = row.get("generation"), str(row.get("leader_id") or "")
    state.current.protocol, state.current.leader = row.get("protocol"), leader
    candidates = ", ".join(map(str, row.get("supported_protocols") or ()))
    steps: list[Step] = [Note(seq, ts, (COORDINATOR,),
                              f"generation {generation}: {row.get('protocol')} wins (candidates {{{candidates}}})")]
    for member in state.members:
        role = "leader, gets the members" if member == leader else "follower"
        steps.append(Message(seq, ts, COORDINATOR, member, "JoinGroup",
                             f"generation {generation} {row.get('protocol')} ({role})", reply=True))
    return steps


def _leader_sync(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    leader = str(row.get("leader_id") or "")
    steps: list[Step] = [Message(seq, ts, m, COORDINATOR, "SyncGroup", "SyncGroup (no assignments)", inferred=True)
                         for m in state.members if m != leader]
    steps.append(Message(seq, ts, leader, COORDINATOR, "SyncGroup",
                         f"SyncGroup with {row.get('n_members')} assignment(s)"))
    return steps


def _snapshot(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    steps: list[Step] = []
    for entry in row.get("members") or ():
        member = _member(state, entry)
        _add(state, member)
        steps.append(Message(seq, ts, COORDINATOR, member, "SyncGroup",
                             f"assigned {_partitions(entry.get('assignment'))}", reply=True))
    return steps


def _left(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    _remove(state, member)
    cause = str(row.get("reason_code") or "")
    if cause == "member_leave":
        return [Message(seq, ts, member, COORDINATOR, "LeaveGroup", "LeaveGroup")]
    return [Note(seq, ts, (member,), f"removed ({cause})")]


def _expired(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    _remove(state, member)
    return [Note(seq, ts, (member, COORDINATOR), f"no Heartbeat within the session timeout: expired "
                                                 f"({row.get('reason_code')})")]


def _pending_expired(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    if row.get("reason_code") == "leave":
        return [Message(seq, ts, member, COORDINATOR, "LeaveGroup", "LeaveGroup (pending member)")]
    return [Note(seq, ts, (member,), "pending member timed out (never rejoined with its id)")]


def _dropped(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    ids = [m for m in str(row.get("raw") or "").split(",") if m]
    for member in ids:
        _remove(state, member)
    return [Note(seq, ts, (COORDINATOR,), "not rejoined in time, removed: " + ", ".join(map(short, ids)))]


def _empty(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.open = False
    state.members.clear()
    if row.get("reason_code") == "group_created":
        return [] if row.get("group_kind") == CONSUMER else [Note(seq, ts, (COORDINATOR,), "group created (Empty)")]
    return [Note(seq, ts, (COORDINATOR,), f"group Empty (generation {row.get('generation')})")]


def _dead(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    reason = row.get("reason_raw") or "deleted"
    return [Note(seq, ts, (COORDINATOR,), f"group Dead ({reason})")]


def _loaded(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), f"{row.get('reason_raw') or 'loaded'} at {row.get('generation')}")]


def _fault(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    detail = row.get("detail") or {}
    member = detail.get("member_id") if isinstance(detail, Mapping) else None
    over = (str(member),) if member in state.labels else (COORDINATOR,)
    return [Note(seq, ts, over, f"operator: {row.get('fault')}")]


# -- KIP-848 consumer groups ------------------------------------------------------------------------------


def _epoch_bump(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), f"group epoch {row.get('generation')} ({row.get('reason_code')})")]


def _target(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.current.protocol = row.get("protocol")
    if row.get("protocol") is None:
        return [Note(seq, ts, (COORDINATOR,), "target reset (no members)")]
    targets = [f"{short(str(m.get('member_id')))} {_partitions(m.get('assignment'))}"
               for m in row.get("members") or ()]
    text = "; ".join(targets) if targets else "unchanged"
    return [Note(seq, ts, (COORDINATOR,), f"target of epoch {row.get('generation')} ({row.get('protocol')}): {text}")]


def _member_state(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    revoke = row.get("partitions_pending_revocation") or []
    text = f"epoch {row.get('generation')} {row.get('raw')}: {_partitions(row.get('partitions'))}"
    if revoke:
        text += f", revoke {_partitions(revoke)}"
    return [Message(seq, ts, COORDINATOR, member, "ConsumerGroupHeartbeat", text, reply=True)]


def _consumer_left(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    temporary = row.get("reason_code") == "static_temporary_leave"
    if not temporary:
        _remove(state, member)
    epoch = -2 if temporary else -1
    return [Message(seq, ts, member, COORDINATOR, "ConsumerGroupHeartbeat", f"ConsumerGroupHeartbeat epoch {epoch}")]


def _fenced(state: _GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    _remove(state, member)
    return [Note(seq, ts, (member, COORDINATOR), f"fenced: {row.get('reason_raw') or row.get('reason_code')}")]


_RULES = {
    "MEMBER_JOIN_REQUEST": _join_request, "MEMBER_JOINED": _joined, "STATIC_MEMBER_REPLACED": _replaced,
    "REBALANCE_PREPARE": _prepare, "JOIN_COMPLETE": _join_complete, "SYNC_LEADER_ASSIGNMENT": _leader_sync,
    "GENERATION_SNAPSHOT": _snapshot, "MEMBER_LEFT": _left, "MEMBER_SESSION_EXPIRED": _expired,
    "PENDING_MEMBER_EXPIRED": _pending_expired, "MEMBERS_DROPPED_NOT_REJOINED": _dropped, "GROUP_EMPTY": _empty,
    "GROUP_DEAD": _dead, "GROUP_LOADED": _loaded, "FAULT_INJECTED": _fault, "K848_EPOCH_BUMP": _epoch_bump,
    "K848_TARGET_COMPUTED": _target, "K848_MEMBER_STATE": _member_state, "K848_MEMBER_LEFT": _consumer_left,
    "K848_MEMBER_FENCED": _fenced, "MEMBER_JOIN_REFUSED": _refused, "MEMBER_REBALANCE_NOTIFIED": _notified,
    "REBALANCE_DELAY_EXTENDED": _delay_extended,
}
