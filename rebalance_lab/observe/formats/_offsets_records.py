"""``__consumer_offsets`` GroupMetadata records rebuilt from canonical events (spec §4.2, §4.4).

The coordinator writes a ``GroupMetadataKey`` v2 / ``GroupMetadataValue`` v3 record after
each completed sync (``GENERATION_SNAPSHOT``), when a rebalance ends with no members
(``GROUP_EMPTY`` after a join phase) and a tombstone when the group is deleted
(``GROUP_DEAD``). Kafka 4.x's group coordinator also writes one when a JoinGroup creates the
group (``GROUP_EMPTY`` "group created by join": generation 0, protocol type "", the creation time
as currentStateTimestamp; ``GroupMetadataManager.classicGroupJoin`` appends
``newEmptyGroupMetadataRecord`` for a new group), Kafka 3.x's does not (both seen in the real
brokers' dumps, tests/unit/observe/test_dump_log_real_samples.py). :class:`RecordBuilder` folds
the events and yields one :class:`MetadataRecord` per record. An empty-group snapshot (what a
dump's empty record reads as: ``GROUP_EMPTY`` at its currentStateTimestamp, then the snapshot at
its CreateTime) is that one record, not two.

Members' subscription and assignment bytes are encoded by our own ``ConsumerProtocol`` encoder
in the version their client sent, as far as the events tell it: a subscription with nothing but
its topics (no owned partitions, generation or rack) is kafka-python's version 0 with empty user
data, and a leader that sent one also sent version-0 assignments with empty user data (what the
real brokers' dumps of kafka-python groups show); any other is a current Java client's version 3
with null user data.

What a recording does not keep, and so the records cannot show: assignor user data (a real
``cooperative-sticky`` or ``sticky`` member sends some), the version a Java client's first
subscription had (version 3 here; a bare one reads as kafka-python's) and, for groups whose
protocol type is not ``consumer``, the opaque subscription and assignment bytes (empty here).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.observe.formats._common import Event, epoch_ms, grouped_by_topic
from rebalance_lab.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

KEY_VERSION = 2  # GroupMetadataKey
VALUE_VERSION = 3  # GroupMetadataValue: what 2.3+ writes, 4.x included


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class MetadataRecord:
    """One record: ``value`` is None for a tombstone."""

    event: Event  # the event it stands for (its ts is the record's CreateTime)
    group_id: str
    value: dict[str, Any] | None  # protocolType, generation, protocol, leader, currentStateTimestamp
    members: tuple[MemberRecord, ...] = ()

    @property
    def create_time(self) -> int:
        return epoch_ms(self.event)

    def key_bytes(self) -> bytes:
        return struct.pack(">h", KEY_VERSION) + _string(self.group_id)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        v = self.value
        parts = [struct.pack(">h", VALUE_VERSION), _string(v["protocolType"]), struct.pack(">i", v["generation"]),
                 _string(v["protocol"]), _string(v["leader"]), struct.pack(">q", v["currentStateTimestamp"]),
                 struct.pack(">i", len(self.members))]
        parts.extend(_member_bytes(m) for m in self.members)
        return b"".join(parts)


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def _member_bytes(m: MemberRecord) -> bytes:
    return b"".join([_string(m.member_id), _string(m.group_instance_id), _string(m.client_id),
                     _string(m.client_host), struct.pack(">ii", m.rebalance_timeout, m.session_timeout),
                     _bytes(m.subscription), _bytes(m.assignment)])


def _tps(rows: Iterable[Mapping[str, Any]] | None) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(str(tp["topic"]), int(tp["partition"])) for tp in rows or ())


def bare_subscription(row: Mapping[str, Any]) -> bool:
    """Nothing but topics: what kafka-python's version-0 subscription reads as (no owned partitions,
    generation or rack; a v1+ client's first join reads the same, see the module's docstring)."""
    generation = row.get("generation")
    return not row.get("owned") and not (isinstance(generation, int) and generation >= 0) and not row.get("rack_id")


def member_record(row: Mapping[str, Any], protocol_type: str | None, legacy_leader: bool = False) -> MemberRecord:
    """A snapshot member as the record holds it; ``consumer`` members' bytes are re-encoded
    (``legacy_leader``: the assignments came from a kafka-python leader, version 0 with empty user data)."""
    subscription = assignment = b""
    if protocol_type == PROTOCOL_TYPE:
        if bare_subscription(row):
            subscription = encode_subscription(Subscription(topics=tuple(row.get("topics") or ()), user_data=b""), 0)
        else:
            generation = row.get("generation")
            sub = Subscription(topics=tuple(row.get("topics") or ()), owned_partitions=_tps(row.get("owned")),
                               generation_id=generation if isinstance(generation, int) and generation >= 0 else None,
                               rack_id=row.get("rack_id"))
            subscription = encode_subscription(sub)
        tps = _tps(row.get("assignment"))
        assignment = encode_assignment(Assignment(tps, b""), 0) if legacy_leader else encode_assignment(Assignment(tps))
    return MemberRecord(
        member_id=str(row.get("member_id")), group_instance_id=row.get("group_instance_id"),
        client_id=str(row.get("client_id") or ""), client_host=str(row.get("client_host") or ""),
        rebalance_timeout=int(row.get("rebalance_timeout_ms") or 0),
        session_timeout=int(row.get("session_timeout_ms") or 0),
        subscription=subscription, assignment=assignment,
    )


_WRITERS = frozenset({"GENERATION_SNAPSHOT", "GROUP_EMPTY", "GROUP_DEAD"})  # the events a record stands for


class RecordBuilder:
    """Folds events; :meth:`records` yields a record for every event that writes one, as Kafka ``kafka``
    (4 or 3) writes them."""

    def __init__(self, kafka: int = 4) -> None:
        self._kafka = kafka
        self._join_done: dict[tuple[str, int], int] = {}  # (group, generation) -> JOIN_COMPLETE ms
        self._protocol_type: dict[str, str] = {}
        self._empty_at: dict[str, MetadataRecord] = {}  # a group's empty record, until its empty snapshot

    def records(self, events: Iterable[Event]) -> Iterator[MetadataRecord]:
        for event in events:
            yield from self.record(event)
        yield from self._empty_at.values()
        self._empty_at.clear()

    def record(self, event: Event) -> list[MetadataRecord]:
        """The records ``event`` completes (an empty-group record waits for the snapshot that may follow it)."""
        group_id, kind = event.get("group_id"), event.get("event_type")
        if group_id is None:
            return []
        group = str(group_id)
        if event.get("protocol_type"):
            self._protocol_type[group] = str(event["protocol_type"])
        if kind == "JOIN_COMPLETE":
            self._join_done[(group, int(event.get("generation") or 0))] = epoch_ms(event)
        if kind not in _WRITERS:
            return []
        pending = self._empty_at.pop(group, None)
        if kind == "GENERATION_SNAPSHOT" and pending is not None and not event.get("members"):
            assert pending.value is not None  # the empty snapshot is the pending record, written at its time
            return [MetadataRecord(event, group, {**pending.value, "protocolType": self._protocol_type_of(event)})]
        done = [pending] if pending is not None else []
        if kind == "GENERATION_SNAPSHOT":
            done.append(self._snapshot(group, event))
        elif kind == "GROUP_EMPTY":
            self._empty(group, event)
        elif kind == "GROUP_DEAD":
            self._protocol_type.pop(group, None)
            done.append(MetadataRecord(event, group, None))
        return done

    def _protocol_type_of(self, event: Event) -> str:
        return str(event.get("protocol_type") or self._protocol_type.get(str(event["group_id"])) or "")

    def _snapshot(self, group: str, event: Event) -> MetadataRecord:
        generation = int(event.get("generation") or 0)
        protocol_type = self._protocol_type_of(event)
        # currentStateTimestamp: the move into CompletingRebalance, i.e. the end of the join phase (§4.4)
        state_ts = self._join_done.get((group, generation), epoch_ms(event))
        value = {"protocolType": protocol_type, "generation": generation, "protocol": event.get("protocol"),
                 "leader": event.get("leader_id"), "currentStateTimestamp": state_ts}
        rows = event.get("members") or ()
        leader = next((m for m in rows if m.get("member_id") == event.get("leader_id")), None)
        legacy = leader is not None and bare_subscription(leader)
        members = tuple(member_record(m, protocol_type, legacy) for m in rows)
        return MetadataRecord(event, group, value, members)

    def _empty(self, group: str, event: Event) -> None:
        if event.get("reason_code") == "group_created":
            if self._kafka < 4 or "offset commit" in str(event.get("reason_raw") or "").replace("_", " "):
                return  # 3.x writes nothing; a commit's simple group is not created by classicGroupJoin
            self._protocol_type.pop(group, None)
        value = {"protocolType": self._protocol_type.get(group, ""), "generation": int(event.get("generation") or 0),
                 "protocol": None, "leader": None, "currentStateTimestamp": epoch_ms(event)}
        self._empty_at[group] = MetadataRecord(event, group, value)


# ---------------------------------------------------------------- JSON (the tools' converters)


def subscription_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolSubscriptionJsonConverter``: the fields of the version the bytes carry."""
    sub = decode_subscription(data)
    version = struct.unpack_from(">h", data)[0]
    out: dict[str, Any] = {"topics": list(sub.topics), "userData": _user_data(sub.user_data)}
    if version >= 1:
        owned = grouped_by_topic(_rows(sub.owned_partitions))
        out["ownedPartitions"] = [{"topic": t, "partitions": ps} for t, ps in owned]
    if version >= 2:
        out["generationId"] = -1 if sub.generation_id is None else sub.generation_id
    if version >= 3:
        out["rackId"] = sub.rack_id
    return out


def assignment_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolAssignmentJsonConverter`` (every version has these two fields)."""
    assignment = decode_assignment(data)
    return {"assignedPartitions": [{"topic": t, "partitions": ps}
                                   for t, ps in grouped_by_topic(_rows(assignment.partitions))],
            "userData": _user_data(assignment.user_data)}


def _user_data(value: bytes | None) -> str | None:
    """Bytes as the JSON converters print them: base64, null when absent."""
    return None if value is None else base64.b64encode(value).decode()


def _rows(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


MemberFields = Callable[[MemberRecord, str], dict[str, Any]]


def value_json(record: MetadataRecord, member_fields: MemberFields) -> dict[str, Any]:
    """``GroupMetadataValueJsonConverter`` (v3 field order); ``member_fields(member, protocolType)``
    renders each member's subscription and assignment."""
    assert record.value is not None
    data = dict(record.value)
    data["members"] = [
        {"memberId": m.member_id, "groupInstanceId": m.group_instance_id, "clientId": m.client_id,
         "clientHost": m.client_host, "rebalanceTimeout": m.rebalance_timeout, "sessionTimeout": m.session_timeout,
         **member_fields(m, record.value["protocolType"])}
        for m in record.members
    ]
    return data
