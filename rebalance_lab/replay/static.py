"""Static membership (KIP-345) in the replay: who a member *is* across member ids, which recorded
static replacements cost no rebalance, and which recorded episodes static membership would
have avoided.

Identity. A member's identity is its ``group.instance.id``; for the static-membership what-if a
dynamic member is given one, ``client_id@client_host`` (a restarted process usually keeps both),
and an identity that two members of one generation share is ambiguous and never matched.

Avoided episodes. A static member that stops does not send LeaveGroup; the coordinator keeps it
until its session times out, and if the same instance joins again before that, the coordinator
hands it the old assignment without a rebalance. So a recorded episode, or a pair of consecutive
recorded episodes, is avoided when all of its membership changes cancel out by identity (every
member that went out came back in, under a new member id) and each came back after it stopped and
within its session timeout of that. Leaving is the ``MEMBER_LEFT`` time, or for a ``MEMBER_SESSION_EXPIRED`` the
expiry minus the session timeout (its last heartbeat); coming back is its ``MEMBER_JOINED`` time
(else the episode start). Episodes with no membership change (metadata, forced, cooperative
follow-ups of their own) are never avoided.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rebalance_lab.replay.timeline import Event, Generation, Member, Timeline

STATIC_REBALANCE_CODES = frozenset({"static_rejoin_metadata", "protocol_change"})


def identity(m: Member, synthesize: bool) -> str:
    if m.group_instance_id is not None:
        return f"i:{m.group_instance_id}"
    if synthesize and m.client_id:
        return f"c:{m.client_id}@{m.client_host or ''}"
    return f"m:{m.member_id}"


def instance_id(m: Member) -> str | None:
    """The group.instance.id the member would use as a static member (see :func:`identity`)."""
    if m.group_instance_id is not None:
        return m.group_instance_id
    return f"{m.client_id}@{m.client_host or ''}" if m.client_id else None


def replacement_kind(e: Event, gens: dict[int, Generation]) -> str:
    """A ``STATIC_MEMBER_REPLACED``: ``"stable"`` (no rebalance, KIP-345), ``"rebalance"`` (it started
    one: changed metadata or protocol) or ``"during"`` (the group was already rebalancing)."""
    number = e.get("generation")
    ts = e["ts"]
    current = gens.get(number) if number is not None else None
    following = gens.get(number + 1) if number is not None else None
    prepare = following.prepare if following is not None else None
    if prepare is not None and prepare["ts"] <= ts:
        code = prepare.get("reason_code")
        return "rebalance" if prepare["ts"] == ts and code in STATIC_REBALANCE_CODES else "during"
    if current is None or (current.t_sync_done is not None and current.t_sync_done <= ts):
        return "stable"
    return "during"


@dataclass(frozen=True)
class Change:
    """One episode's membership change."""

    episode_id: int
    t_start: int | None
    ins: Sequence[Member]
    outs: Sequence[Member]


class Avoidance:
    """Which episodes static membership would have avoided (see the module docstring)."""

    def __init__(self, timeline: Timeline) -> None:
        self.left: dict[str, int] = {}
        self.joined: dict[str, int] = {}
        self.timeouts: dict[str, int] = {}
        for e in timeline.member_events:
            member_id = e.get("member_id")
            if not member_id:
                continue
            timeout = e.get("session_timeout_ms") or _timeout(timeline, member_id)
            if e["event_type"] == "MEMBER_LEFT":
                self.left.setdefault(member_id, e["ts"])
            elif e["event_type"] == "MEMBER_SESSION_EXPIRED" and timeout:
                self.left.setdefault(member_id, e["ts"] - timeout * 1000)
            elif e["event_type"] in ("MEMBER_JOINED", "STATIC_MEMBER_REPLACED"):
                self.joined.setdefault(member_id, e["ts"])
            if timeout:
                self.timeouts.setdefault(member_id, timeout)
        for member_id, member in timeline.directory.items():
            if member.session_timeout_ms:
                self.timeouts.setdefault(member_id, member.session_timeout_ms)

    def avoided(self, changes: Sequence[Change]) -> set[int]:
        result: set[int] = set()
        i = 0
        while i < len(changes):
            one = changes[i]
            if self._cancels([one]):
                result.add(one.episode_id)
                i += 1
            elif i + 1 < len(changes) and self._cancels([one, changes[i + 1]]):
                result.update((one.episode_id, changes[i + 1].episode_id))
                i += 2
            else:
                i += 1
        return result

    def _cancels(self, changes: Sequence[Change]) -> bool:
        if any(not c.ins and not c.outs for c in changes):
            return False
        ins = [m for c in changes for m in c.ins]
        outs = [m for c in changes for m in c.outs]
        if len(ins) != len(outs):  # (most changes: a join or a leave) the counts below cannot be equal
            return False
        in_ids = Counter(identity(m, True) for m in ins)
        out_ids = Counter(identity(m, True) for m in outs)
        if in_ids != out_ids or max(in_ids.values()) > 1:
            return False
        back = {identity(m, True): m for m in ins}
        start = changes[0].t_start
        return all(self._in_time(old, back[identity(old, True)], start) for old in outs)

    def _in_time(self, old: Member, new: Member, start: int | None) -> bool:
        """A new process (new member id) of the same instance, started after the old one stopped and
        within its session timeout (a join and a later leave of one member id is no restart)."""
        if old.member_id == new.member_id:
            return False
        timeout = self.timeouts.get(old.member_id) or old.session_timeout_ms
        left = self.left.get(old.member_id, start)
        came_back = self.joined.get(new.member_id, start)
        if not timeout or left is None or came_back is None:
            return False
        return 0 <= came_back - left <= timeout * 1000


def _timeout(timeline: Timeline, member_id: str) -> int | None:
    known = timeline.directory.get(member_id)
    return known.session_timeout_ms if known is not None else None


def unique_identities(members: Sequence[Member]) -> bool:
    ids = [identity(m, True) for m in members]
    return len(ids) == len(set(ids))
