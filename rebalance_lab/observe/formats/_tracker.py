"""Group state as the event stream implies it, for the renderers that need more than one row.

A broker line names the group's state (B7, B8), a leaving member's client id, host,
timeouts and protocols (Scala B9), or the number of static members (B3): facts that
earlier rows carry. :class:`Tracker` folds the rows it is given, in order, into one
:class:`GroupView` per group. A renderer reads the view *before* applying the row, as the
broker logs the state a request found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rebalance_lab.observe.formats._common import Event, TopicPartitionRow


@dataclass
class MemberView:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    protocols: tuple[str, ...] = ()
    was_pending: bool = False  # got its id through KIP-394's MEMBER_ID_REQUIRED step
    # the client's own view, kept by the client-log renderer
    generation: int = -1
    owned: list[TopicPartitionRow] = field(default_factory=list)


@dataclass
class GroupView:
    group_id: str
    state: str = "Empty"
    generation: int = 0
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberView] = field(default_factory=dict)  # in join order
    pending: dict[str, MemberView] = field(default_factory=dict)

    def n_static(self) -> int:
        return sum(1 for m in self.members.values() if m.group_instance_id is not None)

    def by_instance(self, instance_id: str) -> MemberView | None:
        return next((m for m in self.members.values() if m.group_instance_id == instance_id), None)


def _protocols(event: Event) -> tuple[str, ...]:
    return tuple(str(p) for p in event.get("supported_protocols") or ())


def member_from(event: Event, member_id: str | None = None) -> MemberView:
    """A member as a MEMBER_JOINED / MEMBER_JOIN_REQUEST row describes it."""
    return MemberView(
        member_id=member_id or str(event.get("member_id") or ""),
        group_instance_id=event.get("group_instance_id"),
        client_id=str(event.get("client_id") or ""),
        client_host=str(event.get("client_host") or ""),
        session_timeout_ms=event.get("session_timeout_ms"),
        rebalance_timeout_ms=event.get("rebalance_timeout_ms"),
        protocols=_protocols(event),
    )


def replaced_member_id(event: Event, group: GroupView) -> str | None:
    """The member a STATIC_MEMBER_REPLACED row replaced: ``raw`` says ``replaced <id>``; else
    whoever held the instance id."""
    raw = str(event.get("raw") or "")
    if raw.startswith("replaced "):
        return raw.removeprefix("replaced ")
    held = group.by_instance(str(event.get("group_instance_id")))
    return held.member_id if held else None


def dropped_ids(event: Event) -> list[str]:
    """The member ids of a MEMBERS_DROPPED_NOT_REJOINED row (``raw`` is comma-separated)."""
    return [m for m in str(event.get("raw") or "").split(",") if m]


class Tracker:
    def __init__(self) -> None:
        self.groups: dict[str, GroupView] = {}
        self._apply: dict[str, Callable[[GroupView, Event], None]] = {
            "GROUP_EMPTY": self._empty,
            "MEMBER_JOIN_REQUEST": self._join_request,
            "MEMBER_JOINED": self._joined,
            "STATIC_MEMBER_REPLACED": self._replaced,
            "REBALANCE_PREPARE": lambda g, _e: setattr(g, "state", "PreparingRebalance"),
            "MEMBER_LEFT": self._removed,
            "MEMBER_SESSION_EXPIRED": self._removed,
            "PENDING_MEMBER_EXPIRED": self._pending_gone,
            "MEMBERS_DROPPED_NOT_REJOINED": self._dropped,
            "JOIN_COMPLETE": self._join_complete,
            "SYNC_LEADER_ASSIGNMENT": lambda g, _e: setattr(g, "state", "Stable"),
            "GENERATION_SNAPSHOT": self._snapshot,
        }

    def view(self, event: Event) -> GroupView | None:
        """The group's view before ``event`` (created on first sight); None for cluster rows."""
        group_id = event.get("group_id")
        if group_id is None:
            return None
        return self.groups.setdefault(str(group_id), GroupView(str(group_id)))

    def apply(self, event: Event) -> None:
        view = self.view(event)
        if view is None:
            return
        if event.get("event_type") == "GROUP_DEAD":
            del self.groups[view.group_id]
            return
        handler = self._apply.get(str(event.get("event_type")))
        if handler is not None:
            handler(view, event)

    def _empty(self, group: GroupView, event: Event) -> None:
        if event.get("reason_code") == "group_created":
            self.groups[group.group_id] = GroupView(group.group_id)  # a fresh group under the same id
            return
        group.state, group.protocol, group.leader_id = "Empty", None, None
        group.generation = int(event.get("generation") or group.generation)

    @staticmethod
    def _join_request(group: GroupView, event: Event) -> None:
        member_id = str(event.get("member_id"))
        known = group.members.get(member_id)
        if known is None:
            group.pending[member_id] = member_from(event)
        elif event.get("supported_protocols"):
            known.protocols = _protocols(event)

    @staticmethod
    def _joined(group: GroupView, event: Event) -> None:
        member = member_from(event)
        member.was_pending = group.pending.pop(member.member_id, None) is not None
        group.members[member.member_id] = member

    @staticmethod
    def _replaced(group: GroupView, event: Event) -> None:
        old_id = replaced_member_id(event, group)
        new_id = str(event.get("member_id"))
        member = group.members.pop(old_id, None) if old_id else None
        member = member or member_from(event)
        member.member_id = new_id
        member.protocols = _protocols(event) or member.protocols
        group.members[new_id] = member
        if group.leader_id == old_id:
            group.leader_id = new_id

    @staticmethod
    def _removed(group: GroupView, event: Event) -> None:
        group.members.pop(str(event.get("member_id")), None)
        group.leader_id = event.get("leader_id", group.leader_id)

    @staticmethod
    def _pending_gone(group: GroupView, event: Event) -> None:
        group.pending.pop(str(event.get("member_id")), None)

    @staticmethod
    def _dropped(group: GroupView, event: Event) -> None:
        for member_id in dropped_ids(event):
            group.members.pop(member_id, None)

    @staticmethod
    def _join_complete(group: GroupView, event: Event) -> None:
        group.state = "CompletingRebalance"
        group.generation = int(event.get("generation") or group.generation)
        group.protocol = event.get("protocol")
        group.leader_id = event.get("leader_id")

    @staticmethod
    def _snapshot(group: GroupView, event: Event) -> None:
        group.state = "Stable"
        group.generation = int(event.get("generation") or group.generation)
        for row in event.get("members") or ():
            member_id = str(row.get("member_id"))
            if member_id not in group.members:
                group.members[member_id] = member_from(row)
