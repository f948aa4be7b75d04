"""Canonical events -> what each member's Java consumer (classic protocol, kafka-clients 4.4.0) would log (spec §3.1).

Lines carry the consumer's ``LogContext`` prefix, ``[Consumer clientId={cid}, groupId={g}] ``
(``[Consumer instanceId={i}, clientId={cid}, groupId={g}] `` for static members). The
coordinator lines come from ``ConsumerCoordinator`` (``AbstractCoordinator`` logs through
``getClass()``); the rebalance-listener lines, ``Adding newly assigned partitions``,
``Revoke ...`` and ``Lost ...``, from ``ConsumerRebalanceListenerInvoker`` (3.7+). The
envelope is a log4j pattern, ``[%d] %p %m (%c)%n`` by default, in the given time zone.

Each member's lines are derived from the group's events, at the event's time:

=============================  ===============================================================
``MEMBER_JOIN_REQUEST``        a new member: ``(Re-)joining group`` and ``Request joining group due to:
                               need to re-join with the given member-id: {m}``; a member rejoining
                               during PreparingRebalance: ``Request joining group due to: group is
                               already rebalancing``, then (eager) ``Revoke previously assigned
                               partitions ...`` and ``(Re-)joining group``
``MEMBER_JOINED``              ``(Re-)joining group`` (the JoinGroup that got it added)
``STATIC_MEMBER_REPLACED``     ``(Re-)joining group`` of the restarted static consumer
``JOIN_COMPLETE``              ``Successfully joined group with generation Generation{...}`` per member
``GENERATION_SNAPSHOT``        the leader's ``Finished assignment for group at generation N: {...}``
                               (Java ``HashMap`` order of member ids), then per member ``Successfully
                               synced group in generation Generation{...}``, (cooperative) ``Updating
                               assignment with ...`` and revocations, ``Notifying assignor about the new
                               Assignment(partitions=[...])``, ``Adding newly assigned partitions: ...``
``MEMBER_LEFT``                (a dynamic member's LeaveGroup) ``Revoke``/``Lost previously assigned
                               partitions ...`` and ``Member {m} sending LeaveGroup request to
                               coordinator {host}:{port} (id: +{broker} rack: null isFenced: false) due to
                               the consumer is being closed``
=============================  ===============================================================

A member is cooperative when every assignor it offered is ``cooperative-sticky`` (the Java
consumer's rule), else eager. Skipped: everything a client does not log at INFO or cannot
know from the events (a session expiry, the broker's own bookkeeping, ``TOPIC_METADATA``,
faults, ...). The rejoin reason of a member that itself starts a rebalance (subscription or
metadata change) is not in the events, so that ``Request joining group due to`` line is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from rebalance_lab.clients.assignors.java_hashmap import string_hash_order
from rebalance_lab.observe.formats._common import (
    Event,
    Layout,
    TopicPartitionRow,
    event_time,
    tp_list,
    tp_sort_key,
    tp_text,
    zone,
)
from rebalance_lab.observe.formats._tracker import GroupView, MemberView, Tracker, member_from, replaced_member_id

COORDINATOR_LOGGER = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
LISTENER_LOGGER = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"
DEFAULT_LAYOUT = "[%d] %p %m (%c)%n"
COOPERATIVE = frozenset({"cooperative-sticky"})

RENDERED = frozenset({"MEMBER_JOIN_REQUEST", "MEMBER_JOINED", "STATIC_MEMBER_REPLACED", "JOIN_COMPLETE",
                      "GENERATION_SNAPSHOT", "MEMBER_LEFT"})


@dataclass(frozen=True)
class _Line:
    member: MemberView
    message: str
    logger: str = COORDINATOR_LOGGER


Handler = Callable[[Event, GroupView], list[_Line]]


def prefix(group_id: str, member: MemberView) -> str:
    """``ConsumerUtils.createLogContext``."""
    if member.group_instance_id is not None:
        return f"[Consumer instanceId={member.group_instance_id}, clientId={member.client_id}, groupId={group_id}] "
    return f"[Consumer clientId={member.client_id}, groupId={group_id}] "


def generation_text(generation: Any, member_id: str, protocol: Any) -> str:
    """``AbstractCoordinator.Generation.toString``."""
    return f"Generation{{generationId={generation}, memberId='{member_id}', protocol='{protocol}'}}"


def _sorted(tps: Iterable[TopicPartitionRow]) -> list[TopicPartitionRow]:
    return sorted(tps, key=tp_sort_key)


def _names(tps: Iterable[TopicPartitionRow]) -> str:
    """The listener invoker's sorted set as 4.4.0's ``ConsumerRebalanceListenerInvoker`` prints it: ``[t-0, t-1]``
    (seen in a real 4.4.0 client's log, tests/replay_evidence)."""
    return "[" + ", ".join(tp_text(tp) for tp in _sorted(tps)) + "]"


def _minus(a: Sequence[TopicPartitionRow], b: Sequence[TopicPartitionRow]) -> list[TopicPartitionRow]:
    keys = {tp_sort_key(tp) for tp in b}
    return _sorted(tp for tp in a if tp_sort_key(tp) not in keys)


def is_cooperative(member: MemberView) -> bool:
    return bool(member.protocols) and set(member.protocols) <= COOPERATIVE


class ClientLogRenderer:
    def __init__(self, tz: str | tzinfo = "UTC", layout: str = DEFAULT_LAYOUT, client_id: str | None = None,
                 coordinator: str = "localhost:9092", broker_id: int | None = None) -> None:
        self.layout = Layout(layout, zone(tz))
        self.client_id = client_id
        self.coordinator = coordinator
        self.broker_id = broker_id
        self.tracker = Tracker()
        self._handlers: dict[str, Handler] = {
            "MEMBER_JOIN_REQUEST": self._join_request,
            "MEMBER_JOINED": lambda e, _g: [_Line(member_from(e), "(Re-)joining group")],
            "STATIC_MEMBER_REPLACED": self._replaced,
            "JOIN_COMPLETE": self._join_complete,
            "GENERATION_SNAPSHOT": self._snapshot,
            "MEMBER_LEFT": self._left,
        }

    def render(self, events: Iterable[Event]) -> Iterator[str]:
        for event in events:
            group = self.tracker.view(event)
            handler = self._handlers.get(str(event.get("event_type")))
            lines = handler(event, group) if handler and group is not None else []
            self.tracker.apply(event)
            for line in lines:
                if self.client_id is None or line.member.client_id == self.client_id:
                    message = prefix(str(event["group_id"]), line.member) + line.message
                    yield self.layout.format(event_time(event), "INFO", message, line.logger)

    # -- joining ---------------------------------------------------------------------------

    def _join_request(self, e: Event, g: GroupView) -> list[_Line]:
        member_id = str(e.get("member_id"))
        known = g.members.get(member_id)
        if known is None:  # KIP-394 step 1: the broker handed out an id and wants a second JoinGroup
            new = member_from(e)
            return [_Line(new, "(Re-)joining group"),
                    _Line(new, f"Request joining group due to: need to re-join with the given member-id: {member_id}")]
        lines = []
        if g.state == "PreparingRebalance":  # it learnt of the rebalance from a heartbeat
            lines.append(_Line(known, "Request joining group due to: group is already rebalancing"))
        lines.extend(self._before_join(known))
        lines.append(_Line(known, "(Re-)joining group"))
        return lines

    @staticmethod
    def _before_join(member: MemberView) -> list[_Line]:
        """``onJoinPrepare``: an eager member revokes everything it owns (the line even when it
        owns nothing); a cooperative one keeps its partitions (its subscription is unchanged)."""
        if member.generation < 0 or is_cooperative(member):
            return []
        owned, member.owned = member.owned, []
        return [_Line(member, f"Revoke previously assigned partitions {_names(owned)}", LISTENER_LOGGER)]

    def _replaced(self, e: Event, g: GroupView) -> list[_Line]:
        old_id = replaced_member_id(e, g)
        member = g.members.get(old_id) if old_id else None
        member = member or member_from(e)
        member.generation, member.owned = -1, []  # a restarted process starts afresh
        return [_Line(member, "(Re-)joining group")]

    def _join_complete(self, e: Event, g: GroupView) -> list[_Line]:
        generation, protocol = e.get("generation"), e.get("protocol")
        lines = []
        for member in g.members.values():
            member.generation = int(generation or 0)
            text = generation_text(generation, member.member_id, protocol)
            lines.append(_Line(member, f"Successfully joined group with generation {text}"))
        return lines

    # -- syncing ---------------------------------------------------------------------------

    def _snapshot(self, e: Event, g: GroupView) -> list[_Line]:
        rows = {str(m.get("member_id")): m for m in e.get("members") or ()}
        lines = self._leader_assignment(e, g, rows)
        for member_id, row in rows.items():
            member = g.members.get(member_id) or member_from(row, member_id)
            lines.extend(self._synced(e, member, list(row.get("assignment") or ())))
        return lines

    @staticmethod
    def _leader_assignment(e: Event, g: GroupView, rows: dict[str, Any]) -> list[_Line]:
        leader_id = e.get("leader_id")
        if leader_id not in rows:
            return []
        leader = g.members.get(leader_id) or member_from(rows[leader_id], leader_id)
        entries = [f"{m}=Assignment(partitions={tp_list(rows[m].get('assignment') or ())})"
                   for m in string_hash_order(list(rows))]
        text = f"Finished assignment for group at generation {e.get('generation')}: {{{', '.join(entries)}}}"
        return [_Line(leader, text)]

    @staticmethod
    def _synced(e: Event, member: MemberView, assigned: list[TopicPartitionRow]) -> list[_Line]:
        text = generation_text(e.get("generation"), member.member_id, e.get("protocol"))
        lines = [_Line(member, f"Successfully synced group in generation {text}")]
        owned = member.owned
        added, revoked = _minus(assigned, owned), _minus(owned, assigned)
        if is_cooperative(member):
            lines.append(_Line(member, (
                "Updating assignment with\n"
                f"\tAssigned partitions:                       {tp_list(_sorted(assigned))}\n"
                f"\tCurrent owned partitions:                  {tp_list(_sorted(owned))}\n"
                f"\tAdded partitions (assigned - owned):       {tp_list(added)}\n"
                f"\tRevoked partitions (owned - assigned):     {tp_list(revoked)}\n")))
            if revoked:
                lines.append(_Line(member, f"Revoke previously assigned partitions {_names(revoked)}",
                                   LISTENER_LOGGER))
                lines.append(_Line(member, f"Request joining group due to: need to revoke partitions "
                                           f"{tp_list(revoked)} as indicated by the current assignment and re-join"))
        lines.append(_Line(member, f"Notifying assignor about the new Assignment(partitions={tp_list(assigned)})"))
        lines.append(_Line(member, f"Adding newly assigned partitions: {_names(added)}", LISTENER_LOGGER))
        member.owned = list(assigned)
        return lines

    # -- leaving ---------------------------------------------------------------------------

    def _left(self, e: Event, g: GroupView) -> list[_Line]:
        """``close()``: ``onLeavePrepare`` drops the partitions, then ``maybeLeaveGroup``. Static
        members never send LeaveGroup, so a static member's MEMBER_LEFT came from elsewhere."""
        member = g.members.get(str(e.get("member_id")))
        if member is None or member.group_instance_id is not None or e.get("reason_code") not in (None, "member_leave"):
            return []
        lines = []
        if member.owned:
            verb = "Revoke" if g.state == "Stable" else "Lost"  # Lost while a rebalance is in progress
            lines.append(_Line(member, f"{verb} previously assigned partitions {_names(member.owned)}",
                               LISTENER_LOGGER))
        recorded = e.get("broker_id")
        broker = self.broker_id if self.broker_id is not None else recorded if isinstance(recorded, int) else 0
        # 4.4.0's GroupCoordinatorNode: id "+<broker id>", and Node.toString adds "isFenced"
        node = f"{self.coordinator} (id: +{broker} rack: null isFenced: false)"
        reason = e.get("client_reason") or "the consumer is being closed"
        lines.append(_Line(member, f"Member {member.member_id} sending LeaveGroup request to coordinator {node} "
                                   f"due to {reason}"))
        return lines


def render(events: Iterable[Event], *, tz: str | tzinfo = "UTC", layout: str = DEFAULT_LAYOUT,
           client_id: str | None = None, coordinator: str = "localhost:9092",
           broker_id: int | None = None) -> Iterator[str]:
    """Every member's client log lines, merged in event order; ``client_id`` keeps one client's.
    ``coordinator`` is the ``host:port`` and ``broker_id`` (default: the event's) the broker the
    LeaveGroup line names."""
    return ClientLogRenderer(tz, layout, client_id, coordinator, broker_id).render(events)
