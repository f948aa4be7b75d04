"""The sequence model's rules: each ``rbl-event/1`` row type as the arrows and notes it stands for.

:class:`GroupState` is what one group's rows have told so far; :func:`steps_of` turns the next row into steps
(and updates the state). Which arrows are inferred rather than recorded is said in :mod:`.sequence`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rebalance_lab.observe.sequence_model import (
    CONSUMER,
    COORDINATOR,
    UUID_TAIL,
    Generation,
    GroupSequence,
    Message,
    Note,
    Step,
    short,
)

_UUIDS = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


class GroupState:
    """What one group's rows have told so far: members, the open generation, the rows awaiting the next."""

    def __init__(self, sequence: GroupSequence) -> None:
        self.sequence = sequence
        self.labels: dict[str, str] = {}
        self.members: list[str] = []  # member ids in the group, in join order
        self.before_rebalance: set[str] = set()  # members when the open rebalance started
        self.rejoined: set[str] = set()  # members that sent a JoinGroup since it started
        self.open = False  # a classic rebalance is under way (PreparingRebalance)
        self.notified: set[str] = set()  # members whose REBALANCE_IN_PROGRESS heartbeat answer is recorded
        self.operator_expires: set[str] = set()  # members the operator is expiring (its fault row comes first)
        self.current = Generation(0)
        self.tail: list[tuple[Mapping[str, Any], list[Step]]] = []  # rows after the generation settled

    def label(self, member_id: str) -> str:
        return self.labels.get(member_id) or short(member_id)


def _partitions(tps: Any) -> str:
    if not isinstance(tps, list):
        return "?"
    if not tps:
        return "nothing"
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(str(tp.get("topic")), []).append(int(tp.get("partition", -1)))
    return " ".join(f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in by_topic.items())


# -- rows to steps: one rule per event type -------------------------------------------------------------


def steps_of(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    rule = _RULES.get(str(row.get("event_type")))
    return rule(state, row) if rule else []


def _seq(row: Mapping[str, Any]) -> tuple[int, str]:
    return int(row.get("seq") or 0), str(row.get("ts") or "")


def _member(state: GroupState, row: Mapping[str, Any]) -> str:
    member_id = str(row.get("member_id") or "")
    if member_id not in state.labels:
        name = row.get("group_instance_id") or row.get("client_id")
        tail = UUID_TAIL.search(member_id)
        state.labels[member_id] = f"{name}-{tail.group(1)}" if name and tail else (str(name or "") or short(member_id))
    return member_id


def _add(state: GroupState, member_id: str) -> None:
    if member_id not in state.members:
        state.members.append(member_id)


def _remove(state: GroupState, member_id: str) -> None:
    if member_id in state.members:
        state.members.remove(member_id)


def _offers(row: Mapping[str, Any]) -> str:
    return "[" + ", ".join(map(str, row.get("supported_protocols") or ())) + "]"


def _join_request(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
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


def _refused(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row) if row.get("member_id") else f"refused:{row.get('client_id')}"
    state.labels.setdefault(member, str(row.get("client_id") or "?"))
    group = f" (the group offers [{row['raw'].replace(',', ', ')}])" if row.get("raw") else ""
    return [Message(seq, ts, member, COORDINATOR, "JoinGroup", f"JoinGroup {_offers(row)}"),
            Message(seq, ts, COORDINATOR, member, "JoinGroup", f"{row.get('reason_code')}{group}", reply=True)]


def _notified(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    state.notified.add(member)
    return [Message(seq, ts, member, COORDINATOR, "Heartbeat", "Heartbeat"),
            Message(seq, ts, COORDINATOR, member, "Heartbeat", "REBALANCE_IN_PROGRESS", reply=True)]


def _delay_extended(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), str(row.get("reason_raw") or "initial delay extended"))]


def _joined(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
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


def _replaced(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    old = str(row.get("raw") or "").removeprefix("replaced ")
    _remove(state, old)
    _add(state, member)
    api = "ConsumerGroupHeartbeat" if row.get("group_kind") == CONSUMER else "JoinGroup"
    text = f"{api} instance {row.get('group_instance_id')} member_id=''"
    return [Message(seq, ts, member, COORDINATOR, api, text),
            Note(seq, ts, (COORDINATOR,), f"static member replaced: {short(old)} is fenced")]


def _prepare(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.open = True
    reason = _UUIDS.sub(r"-\1", str(row.get("reason_raw") or row.get("reason_code") or ""))
    return [Note(seq, ts, (COORDINATOR,), f"PreparingRebalance for generation {row.get('generation')}: {reason}")]


def _join_complete(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
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


def _leader_sync(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    leader = str(row.get("leader_id") or "")
    steps: list[Step] = [Message(seq, ts, m, COORDINATOR, "SyncGroup", "SyncGroup (no assignments)", inferred=True)
                         for m in state.members if m != leader]
    steps.append(Message(seq, ts, leader, COORDINATOR, "SyncGroup",
                         f"SyncGroup with {row.get('n_members')} assignment(s)"))
    return steps


def _snapshot(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    steps: list[Step] = []
    for entry in row.get("members") or ():
        member = _member(state, entry)
        _add(state, member)
        steps.append(Message(seq, ts, COORDINATOR, member, "SyncGroup",
                             f"assigned {_partitions(entry.get('assignment'))}", reply=True))
    return steps


def _left(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    _remove(state, member)
    cause = str(row.get("reason_code") or "")
    if cause == "member_leave":
        return [Message(seq, ts, member, COORDINATOR, "LeaveGroup", "LeaveGroup")]
    return [Note(seq, ts, (member,), f"removed ({cause})")]


def _expired(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    _remove(state, member)
    if str(row.get("member_id")) in state.operator_expires:
        state.operator_expires.discard(str(row.get("member_id")))
        return [Note(seq, ts, (member, COORDINATOR), "expired by the operator (its session timeout run now)")]
    return [Note(seq, ts, (member, COORDINATOR), f"no Heartbeat within the session timeout: expired "
                                                 f"({row.get('reason_code')})")]


def _pending_expired(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    if row.get("reason_code") == "leave":
        return [Message(seq, ts, member, COORDINATOR, "LeaveGroup", "LeaveGroup (pending member)")]
    return [Note(seq, ts, (member,), "pending member timed out (never rejoined with its id)")]


def _dropped(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    ids = [m for m in str(row.get("raw") or "").split(",") if m]
    for member in ids:
        _remove(state, member)
    return [Note(seq, ts, (COORDINATOR,), "not rejoined in time, removed: " + ", ".join(map(short, ids)))]


def _empty(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.open = False
    state.members.clear()
    if row.get("reason_code") == "group_created":
        return [] if row.get("group_kind") == CONSUMER else [Note(seq, ts, (COORDINATOR,), "group created (Empty)")]
    return [Note(seq, ts, (COORDINATOR,), f"group Empty (generation {row.get('generation')})")]


def _dead(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    reason = row.get("reason_raw") or "deleted"
    return [Note(seq, ts, (COORDINATOR,), f"group Dead ({reason})")]


def _loaded(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), f"{row.get('reason_raw') or 'loaded'} at {row.get('generation')}")]


def _fault(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    detail = row.get("detail") or {}
    member = detail.get("member_id") if isinstance(detail, Mapping) else None
    if row.get("fault") == "expire_member" and isinstance(member, str):
        state.operator_expires.add(member)
    over = (str(member),) if member in state.labels else (COORDINATOR,)
    return [Note(seq, ts, over, f"operator: {row.get('fault')}")]


# -- KIP-848 consumer groups ------------------------------------------------------------------------------


def _epoch_bump(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    return [Note(seq, ts, (COORDINATOR,), f"group epoch {row.get('generation')} ({row.get('reason_code')})")]


def _target(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    state.current.protocol = row.get("protocol")
    if row.get("protocol") is None:
        return [Note(seq, ts, (COORDINATOR,), "target reset (no members)")]
    targets = [f"{short(str(m.get('member_id')))} {_partitions(m.get('assignment'))}"
               for m in row.get("members") or ()]
    text = "; ".join(targets) if targets else "unchanged"
    return [Note(seq, ts, (COORDINATOR,), f"target of epoch {row.get('generation')} ({row.get('protocol')}): {text}")]


def _member_state(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    revoke = row.get("partitions_pending_revocation") or []
    text = f"epoch {row.get('generation')} {row.get('raw')}: {_partitions(row.get('partitions'))}"
    if revoke:
        text += f", revoke {_partitions(revoke)}"
    return [Message(seq, ts, COORDINATOR, member, "ConsumerGroupHeartbeat", text, reply=True)]


def _consumer_left(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
    seq, ts = _seq(row)
    member = _member(state, row)
    temporary = row.get("reason_code") == "static_temporary_leave"
    if not temporary:
        _remove(state, member)
    epoch = -2 if temporary else -1
    return [Message(seq, ts, member, COORDINATOR, "ConsumerGroupHeartbeat", f"ConsumerGroupHeartbeat epoch {epoch}")]


def _fenced(state: GroupState, row: Mapping[str, Any]) -> list[Step]:
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
