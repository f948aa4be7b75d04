"""The classic membership side of a group's fold: who is in the group, from member events (split from timeline.py).

:class:`MembershipFold` keeps the membership the member events build (joins, leaves, expiries, static
replacements), the fallback of a generation no record lists, and what a broker's INFO lines leave
implicit, as real 3.9.2 and 4.4.0 brokers showed (tests/replay_evidence):

* a member given an id (``MEMBER_JOIN_REQUEST``, B7) and still pending when a join completes has
  joined: the coordinator waits for its pending members (``GroupMetadata.hasAllMembersJoined``) and
  Kafka 3.x logs their second join at DEBUG only;
* a static member replaced by a process whose new member id no line names stays under its
  ``group.instance.id`` with the id known so far, until a departure or a record names the new one;
* a second record of the same generation naming a static member under a new member id is that
  member's restart without a rebalance (KIP-345), folded once when a log line reports it too.

KIP-848 members' joins and departures go on to :class:`~rebalance_lab.replay.epochs.EpochFold`.
"""

from __future__ import annotations

from rebalance_lab.replay.epochs import EpochFold
from rebalance_lab.replay.generation import Event, Generation, Member, Timeline, merged

_DEPARTURES = frozenset({"MEMBER_LEFT", "MEMBER_SESSION_EXPIRED"})


class MembershipFold:
    """Membership state and handlers; :class:`rebalance_lab.replay.timeline._Fold` adds the generations'."""

    def __init__(self, timeline: Timeline) -> None:
        self.t = timeline
        self.current: dict[str, Member] = {}  # membership rebuilt from member events (the fallback)
        self.epochs = EpochFold(self.t, self.current)  # (given the data, not this fold: no reference cycle)
        self.gone: set[str] = set()  # KIP-848 members that left or were replaced
        self.pending: dict[str, Member] = {}  # given an id and asked to rejoin (B7), not yet seen joining
        #: instance id -> the member id of a static member replaced by a process whose new id no line names
        self.stale: dict[str, str] = {}
        self.replacements: dict[tuple[str | None, str | None], Event] = {}  # (instance id, old id) -> its event
        self.static_ids: dict[int, dict[str, str]] = {}  # generation -> its latest record's instance -> member id

    def joined(self, e: Event) -> None:
        if e.get("group_kind") == "consumer":
            self._consumer_joined(e)
            return
        self.t.member_events.append(e)
        if e.get("member_id"):
            member = _member_from_event(e)
            self._learn(member)
            self.current[member.member_id] = member
            self.pending.pop(member.member_id, None)

    def _consumer_joined(self, e: Event) -> None:
        """A KIP-848 member's join, or an upsert of a known one (a new subscription: what it does not say is kept),
        or in an offsets dump the second half of a static replacement (:meth:`.EpochFold.replacing`)."""
        member_id = e.get("member_id")
        previous = self.current.get(member_id) if member_id else None
        old = self.epochs.replacing(e) if member_id and previous is None else None
        if old is not None:
            self._forget_departure(old)
            self.replaced({**e, "event_type": "STATIC_MEMBER_REPLACED", "raw": f"replaced {old}"})
            return
        if previous is None:  # (an upsert is no join: not a member event)
            self.t.member_events.append(e)
        self.epochs.joined(e, previous)
        if member_id:
            member = _member_from_event(e)
            if previous is not None:
                member = merged(member, previous)
            self._learn(member)
            self.current[member_id] = member

    def _forget_departure(self, member_id: str) -> None:
        """The departure just recorded for ``member_id`` was a static replacement's first half: not a leave."""
        events = self.t.member_events
        for i in range(len(events) - 1, -1, -1):
            if events[i].get("member_id") == member_id:
                del events[i]
                return

    def join_request(self, e: Event) -> None:
        member_id = e.get("member_id")
        if member_id and member_id not in self.t.directory:
            self._learn(_member_from_event(e))
        if member_id and e.get("reason_code") == "member_id_required" and member_id not in self.current:
            self.pending[member_id] = _member_from_event(e)

    def pending_gone(self, e: Event) -> None:
        self.pending.pop(e.get("member_id") or "", None)

    def _promote_pending(self) -> None:
        """A member given an id (B7) and still pending when a join phase completes has joined: the coordinator
        waits for its pending members before completing a join (GroupMetadata.hasAllMembersJoined), and Kafka 3.x
        logs their second join ("Pending dynamic member … Adding to the group now") at DEBUG only, so a broker
        at its distribution's INFO level shows none (seen on 3.9.2, tests/replay_evidence)."""
        for member_id, member in self.pending.items():
            self.current.setdefault(member_id, member)
        self.pending.clear()

    def _snapshot_replacements(self, g: Generation, members: list[Member], e: Event) -> None:
        """A later record of the same generation naming a static member under a new member id: a static member's
        restart that the coordinator handled without a rebalance (KIP-345; 3.x and 4.x store the group again)."""
        latest = {m.group_instance_id: m.member_id for m in members if m.group_instance_id is not None}
        before = self.static_ids.get(g.generation)
        self.static_ids[g.generation] = latest
        for instance, member_id in latest.items():
            old = before.get(instance) if before is not None else None
            if old is not None and old != member_id:
                self.replaced({**e, "event_type": "STATIC_MEMBER_REPLACED", "member_id": member_id,
                               "group_instance_id": instance, "raw": f"replaced {old}", "members": None,
                               "generation": g.generation})

    def replaced(self, e: Event) -> None:
        """A static member's new member id (the Scala broker line names only the old one)."""
        old = replaced_id(e)
        instance = e.get("group_instance_id")
        if self._known_replacement(e, instance, old):
            return
        self.t.member_events.append(e)
        if old and e.get("group_kind") == "consumer":
            self.gone.add(old)
        if not e.get("member_id") and old in self.current and instance is not None:
            # The line names the old member only: the static member stays, under its instance id, with the
            # member id known so far, until a later line or record names the new one.
            self.stale[instance] = old
            return
        previous = self.current.pop(old, None) if old else None
        if not e.get("member_id"):
            return
        new = _member_from_event(e)
        if previous is not None:
            new.client_id = new.client_id or previous.client_id
            new.client_host = new.client_host or previous.client_host
            new.topics = new.topics or previous.topics
            new.session_timeout_ms = new.session_timeout_ms or previous.session_timeout_ms
        self._learn(new)
        self.current[new.member_id] = new

    def _known_replacement(self, e: Event, instance: str | None, old: str | None) -> bool:
        """The same replacement from a second source (a log line and a record): fold it once, taking the new
        member id from whichever names it."""
        if old is None:
            return False
        first = self.replacements.setdefault((instance, old), e)
        if first is e:
            return False
        new = e.get("member_id")
        if new and not first.get("member_id"):
            first["member_id"] = new
            if self.stale.get(instance or "") == old and old in self.current:
                del self.stale[instance or ""]
                member = self.current.pop(old)
                self.current[new] = Member(new, member.group_instance_id, member.client_id, member.client_host,
                                           member.rack_id, member.session_timeout_ms, member.topics)
        return True

    def static_rejoined(self, e: Event) -> None:
        self.t.static_rejoined.append(e)

    def left(self, e: Event) -> None:
        """A leave or a KIP-848 fence: in a consumer group it also bumps the epoch (:mod:`.epochs`)."""
        if e.get("group_kind") != "consumer":
            self.departed(e)
            return
        member_id = e.get("member_id") or ""
        member = self.current.get(member_id)
        if member is None and member_id in self.gone:
            return  # another source's record of a departure (or a replacement) already folded
        self.departed(e)
        self.gone.add(member_id)
        self.epochs.departed(e, member)

    def k848_left(self, e: Event) -> None:
        """A static member that left *temporarily* stays in the group (its assignment is kept for it)."""
        if e.get("reason_code") == "static_temporary_leave":
            self.t.member_events.append(e)
            return
        self.left(e)

    def departed(self, e: Event) -> None:
        self.t.member_events.append(e)
        member_id = e.get("member_id")
        if member_id and self.current.pop(member_id, None) is None and self.stale:
            # a member id no line named before: the replacement of a static member kept under its old id
            instance = e.get("group_instance_id")
            if instance is None and len(self.stale) == 1:
                instance = next(iter(self.stale))
            old = self.stale.pop(instance, None) if instance is not None else None
            if old is not None:
                self.current.pop(old, None)

    def dropped(self, e: Event) -> None:
        self.t.member_events.append(e)
        for member_id in (e.get("raw") or "").split(","):
            self.current.pop(member_id.strip(), None)

    def _learn(self, m: Member) -> None:
        known = self.t.directory.get(m.member_id)
        if known is None:
            self.t.directory[m.member_id] = Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rack_id, m.session_timeout_ms,
                m.topics)
            return
        known.group_instance_id = known.group_instance_id or m.group_instance_id
        known.client_id = known.client_id or m.client_id
        known.client_host = known.client_host or m.client_host
        known.session_timeout_ms = known.session_timeout_ms or m.session_timeout_ms
        known.topics = known.topics or m.topics

    def _members_from_events(self, g: Generation) -> None:
        """Remember what the member events built up, the membership if no snapshot comes (:func:`fold`)."""
        if g.members is None and g.fallback is None and self.current:
            g.fallback = list(self.current.values())


def _member_from_event(e: Event) -> Member:
    sub = e.get("subscription") or {}
    topics = sub.get("topics")
    return Member(
        member_id=e["member_id"],
        group_instance_id=e.get("group_instance_id"),
        client_id=e.get("client_id"),
        client_host=e.get("client_host"),
        rack_id=e.get("rack_id") or sub.get("rack"),
        session_timeout_ms=e.get("session_timeout_ms"),
        topics=tuple(topics) if topics is not None else None,
    )


def replaced_id(e: Event) -> str | None:
    """The member id a static member replaced: the emulator writes ``raw = "replaced <old id>"``."""
    raw = e.get("raw") or ""
    return raw[len("replaced "):].strip() or None if raw.startswith("replaced ") else None


def is_departure(e: Event) -> bool:
    return e["event_type"] in _DEPARTURES
