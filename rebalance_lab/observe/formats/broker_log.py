"""Canonical events -> the group coordinator's lines of a broker ``server.log`` (spec §2).

Two flavours:

* ``scala``: the Kafka 3.x coordinator (3.2+ texts). Prefix ``[GroupCoordinator {id}]: ``,
  logger ``kafka.coordinator.group.GroupCoordinator``; the offsets partition appears as
  ``(__consumer_offsets-{p})`` inside B1, B2 and B4. B14 comes from
  ``[GroupMetadataManager brokerId={id}] `` / ``kafka.coordinator.group.GroupMetadataManager``.
* ``java``: the 4.x coordinator. Prefix ``[GroupCoordinator id={id} topic=__consumer_offsets
  partition={p}] ``, logger ``org.apache.kafka.coordinator.group.GroupMetadataManager``.

Every line has the envelope ``[yyyy-MM-dd HH:mm:ss,SSS] INFO {message} ({logger})`` with the
time in the given zone (broker-local time, no zone in the text).

What each event type becomes (the B numbers are the spec's §2.2 rows):

=============================  ===============================================================
``REBALANCE_PREPARE``          B1, the reason reworded for the flavour where the coordinators differ
``MEMBER_JOIN_REQUEST``        B7 for a new dynamic member given an id; nothing for a rejoin
``MEMBER_JOINED``              B8 (static); "Pending dynamic member ... Adding to the group now."
                               after B7 (``java`` only: Kafka 3.x logs it at DEBUG, so a broker at
                               its distribution's INFO level has none); B7b for a dynamic member
                               that skipped B7 (JoinGroup < v4)
``STATIC_MEMBER_REPLACED``     B8, "Replacing previously mapped member"
``MEMBER_LEFT``                B9 (Scala: with ``MemberMetadata(...)`` from the member's earlier
                               ``MEMBER_JOINED``) / B9J; nothing when the cause was a sync timeout
                               or the group's max size (Kafka logs no INFO line for those)
``MEMBER_SESSION_EXPIRED``     B5
``PENDING_MEMBER_EXPIRED``     B6 (timeout) or B10 (LeaveGroup)
``MEMBERS_DROPPED_NOT_REJOINED`` B11, ``Set(a, b)`` (Scala) or ``[a, b]`` (Java)
``JOIN_COMPLETE``              B2
``SYNC_LEADER_ASSIGNMENT``     B3
``GROUP_EMPTY``                B4 after a join phase; nothing when the row records the group's creation
``GROUP_DEAD``                 B14 (Scala only; the Java coordinator logs nothing at INFO)
=============================  ===============================================================

Skipped, because the broker logs no INFO line for them: ``GENERATION_SNAPSHOT`` (a
``__consumer_offsets`` record, see ``dump_log``), ``TOPIC_METADATA``, ``FAULT_INJECTED`` /
``FAULT_FIRED`` (the emulator's own), and every client-side or KIP-848 type.

Ordering: Scala logs B9 and B10 *after* removing the member, and the removal may already
have logged B1, B11, B2 or B4 (a rebalance starts, or a pending join phase completes). The
renderer holds those two lines back past the consequences that follow at the same
millisecond in the same group. Java logs them first, in recording order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from rebalance_lab.observe.formats import _broker_texts as texts
from rebalance_lab.observe.formats._broker_noise import noise as noise_line
from rebalance_lab.observe.formats._common import (
    DEFAULT_OFFSETS_PARTITIONS,
    Event,
    FormatError,
    broker_envelope,
    coord_partition,
    event_time,
    zone,
)
from rebalance_lab.observe.formats._tracker import GroupView, Tracker, dropped_ids, member_from, replaced_member_id

SCALA_LOGGER = "kafka.coordinator.group.GroupCoordinator"
SCALA_METADATA_LOGGER = "kafka.coordinator.group.GroupMetadataManager"
JAVA_LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
FLAVOURS = ("scala", "java")

RENDERED = frozenset({
    "REBALANCE_PREPARE", "MEMBER_JOIN_REQUEST", "MEMBER_JOINED", "STATIC_MEMBER_REPLACED", "MEMBER_LEFT",
    "MEMBER_SESSION_EXPIRED", "PENDING_MEMBER_EXPIRED", "MEMBERS_DROPPED_NOT_REJOINED", "JOIN_COMPLETE",
    "SYNC_LEADER_ASSIGNMENT", "GROUP_EMPTY", "GROUP_DEAD",
})
# MEMBER_LEFT causes with no INFO line: a pending-sync expiry (Kafka logs only B1's reason) and a
# member turned away because the group is full (Kafka logs nothing)
_NO_LEAVE_LINE = frozenset({"sync_timeout", "group_max_size"})
# Scala logs these after the removal they report; the events the removal may cause in between:
_SCALA_LATE = frozenset({"MEMBER_LEFT", "PENDING_MEMBER_EXPIRED"})
_CONSEQUENCES = frozenset({"REBALANCE_PREPARE", "MEMBERS_DROPPED_NOT_REJOINED", "JOIN_COMPLETE", "GROUP_EMPTY",
                           "MEMBER_LEFT", "PENDING_MEMBER_EXPIRED"})
NOISE_EVERY = 3  # one unrelated line after every third group line


@dataclass(frozen=True)
class _Line:
    event: Event
    message: str
    metadata_manager: bool = False  # Scala B14 is GroupMetadataManager's


Handler = Callable[[Event, GroupView], list[str]]


class BrokerLogRenderer:
    def __init__(self, flavour: str = "scala", tz: str | tzinfo = "UTC", broker_id: int | None = None,
                 offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS, noise: bool = False) -> None:
        if flavour not in FLAVOURS:
            raise FormatError(f"unknown broker log flavour {flavour!r} (expected one of {', '.join(FLAVOURS)})")
        self.java = flavour == "java"
        self.texts = texts.JAVA if self.java else texts.SCALA
        self.tz = zone(tz)
        self.broker_id = broker_id
        self.offsets_partitions = offsets_partitions
        self.noise = noise
        self.tracker = Tracker()
        self._emitted = 0
        self._handlers: dict[str, Handler] = {
            "REBALANCE_PREPARE": self._prepare, "MEMBER_JOIN_REQUEST": self._join_request,
            "MEMBER_JOINED": self._joined, "STATIC_MEMBER_REPLACED": self._replaced, "MEMBER_LEFT": self._left,
            "MEMBER_SESSION_EXPIRED": lambda e, _g: [self._t("B5", e, m=e.get("member_id"))],
            "PENDING_MEMBER_EXPIRED": self._pending_expired, "MEMBERS_DROPPED_NOT_REJOINED": self._dropped,
            "JOIN_COMPLETE": self._join_complete, "SYNC_LEADER_ASSIGNMENT": self._sync, "GROUP_EMPTY": self._empty,
        }

    # -- the stream ------------------------------------------------------------------------

    def render(self, events: Iterable[Event]) -> Iterator[str]:
        held: list[_Line] = []
        for event in events:
            lines = self.lines(event)
            if held and not _follows(event, held[0].event):
                yield from self._emit(held)
                held = []
            if lines and not self.java and event.get("event_type") in _SCALA_LATE:
                held.extend(lines)
                continue
            yield from self._emit(lines)
        yield from self._emit(held)

    def lines(self, event: Event) -> list[_Line]:
        """The lines of one event (before the envelope); the tracker then takes the event in."""
        group = self.tracker.view(event)
        if group is None:
            return []
        kind = str(event.get("event_type"))
        if kind == "GROUP_DEAD":
            out = [] if self.java else [_Line(event, self._t("B14", event, n=event.get("generation")), True)]
        else:
            handler = self._handlers.get(kind)
            out = [_Line(event, text) for text in handler(event, group)] if handler else []
        self.tracker.apply(event)
        return out

    def _emit(self, lines: list[_Line]) -> Iterator[str]:
        for line in lines:
            yield self._envelope(line)
            self._emitted += 1
            if self.noise and self._emitted % NOISE_EVERY == 0:
                yield from self._noise(line.event)

    def _envelope(self, line: _Line) -> str:
        broker = self._broker(line.event)
        if self.java:
            prefix = f"[GroupCoordinator id={broker} topic=__consumer_offsets partition={self._p(line.event)}] "
            logger = JAVA_LOGGER
        elif line.metadata_manager:
            prefix, logger = f"[GroupMetadataManager brokerId={broker}] ", SCALA_METADATA_LOGGER
        else:
            prefix, logger = f"[GroupCoordinator {broker}]: ", SCALA_LOGGER
        return broker_envelope(event_time(line.event), self.tz, "INFO", prefix + line.message, logger)

    def _noise(self, event: Event) -> Iterator[str]:
        extra = noise_line(self._emitted // NOISE_EVERY, self._broker(event), self._p(event), self.java)
        yield broker_envelope(event_time(event), self.tz, extra.level, extra.message, extra.logger)
        yield from extra.trace

    def _broker(self, event: Event) -> int:
        if self.broker_id is not None:
            return self.broker_id
        recorded = event.get("broker_id")
        return recorded if isinstance(recorded, int) else 0

    def _p(self, event: Event) -> int:
        return coord_partition(event, self.offsets_partitions)

    def _t(self, key: str, event: Event, **values: Any) -> str:
        return self.texts[key].format(g=event.get("group_id"), p=self._p(event), **values)

    # -- one handler per event type --------------------------------------------------------

    def _prepare(self, e: Event, _g: GroupView) -> list[str]:
        old = e.get("prev_generation")
        if old is None:  # a row without it: the canonical generation is the one being formed
            old = int(e.get("generation") or 1) - 1
        reason = str(e.get("reason_raw") or "")
        reason = texts.reason_for_java(reason) if self.java else texts.reason_for_scala(reason)
        return [self._t("B1", e, n=old, reason=reason)]

    def _join_request(self, e: Event, g: GroupView) -> list[str]:
        member_id = str(e.get("member_id"))
        if member_id in g.members or e.get("reason_code") not in (None, "member_id_required"):
            return []  # a known member's rejoin: only B1's reason (if any) shows it
        return [self._t("B7", e, state=g.state, m=member_id)]

    def _joined(self, e: Event, g: GroupView) -> list[str]:
        member_id, instance = e.get("member_id"), e.get("group_instance_id")
        if instance is not None:
            return [self._t("B8", e, i=instance, state=g.state, m=member_id)]
        if member_id not in g.pending:
            return [self._t("B7b", e, state=g.state, m=member_id)]
        if not self.java:
            # Kafka 3.x's GroupCoordinator.doPendingMemberJoinGroup logs this at DEBUG (4.x's GroupMetadataManager
            # at INFO): a 3.9.2 broker at its distribution's INFO level writes no line (seen on the real broker,
            # tests/replay_evidence)
            return []
        return [self._t("pending_join", e, state=g.state, m=member_id)]

    def _replaced(self, e: Event, g: GroupView) -> list[str]:
        old = replaced_member_id(e, g) or "unknown"
        return [self._t("B8_replace", e, i=e.get("group_instance_id"), state=g.state, old=old)]

    def _left(self, e: Event, g: GroupView) -> list[str]:
        if e.get("reason_code") in _NO_LEAVE_LINE:
            return []
        member_id = str(e.get("member_id"))
        reason = e.get("client_reason") or "not provided"
        if self.java:
            return [self._t("B9", e, m=member_id, r=reason)]
        m = g.members.get(member_id) or member_from(e)
        metadata = texts.member_metadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                         m.session_timeout_ms, m.rebalance_timeout_ms, m.protocols)
        return [self._t("B9", e, member=metadata, r=reason)]

    def _pending_expired(self, e: Event, _g: GroupView) -> list[str]:
        if e.get("reason_code") == "leave":
            return [self._t("B10", e, m=e.get("member_id"), r=e.get("client_reason") or "not provided")]
        return [self._t("B6", e, m=e.get("member_id"))]

    def _dropped(self, e: Event, _g: GroupView) -> list[str]:
        ids = dropped_ids(e)
        return [self._t("B11", e, ids=texts.java_set(ids) if self.java else texts.scala_set(ids))]

    def _join_complete(self, e: Event, g: GroupView) -> list[str]:
        return [self._t("B2", e, n=e.get("generation"), k=e.get("n_members", len(g.members)))]

    def _sync(self, e: Event, g: GroupView) -> list[str]:
        # the event's own counts first: a static member replaced under an id no line names leaves the view's stale
        return [self._t("B3", e, leader=e.get("leader_id") or g.leader_id, n=e.get("generation"),
                        k=e.get("n_members", len(g.members)),
                        s=g.n_static() if e.get("n_static") is None else e["n_static"])]

    def _empty(self, e: Event, _g: GroupView) -> list[str]:
        if e.get("reason_code") == "group_created":
            return []  # the group's creation has no line of its own
        return [self._t("B4", e, n=e.get("generation"))]


def _follows(event: Event, held: Event) -> bool:
    """Whether ``event`` is a consequence of the held removal, logged before it by Scala."""
    return (event.get("event_type") in _CONSEQUENCES and event.get("group_id") == held.get("group_id")
            and event.get("ts") == held.get("ts"))


def render(events: Iterable[Event], flavour: str = "scala", *, tz: str | tzinfo = "UTC",
           broker_id: int | None = None, offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
           noise: bool = False) -> Iterator[str]:
    """Broker ``server.log`` lines for ``events``. ``broker_id`` overrides each event's own
    (default 0 where an event has none); ``noise`` interleaves unrelated broker lines."""
    return BrokerLogRenderer(flavour, tz, broker_id, offsets_partitions, noise).render(events)


def render_scala(events: Iterable[Event], **options: Any) -> Iterator[str]:
    return render(events, "scala", **options)


def render_java(events: Iterable[Event], **options: Any) -> Iterator[str]:
    return render(events, "java", **options)
