"""``__consumer_offsets`` GroupMetadata records rebuilt from canonical events (spec §4.2, §4.4).

The coordinator writes a ``GroupMetadataKey`` v2 / ``GroupMetadataValue`` v3 record after
each completed sync (``GENERATION_SNAPSHOT``), when a rebalance ends with no members
(``GROUP_EMPTY`` after a join phase) and a tombstone when the group is deleted
(``GROUP_DEAD``). :class:`RecordBuilder` folds the events and yields one
:class:`MetadataRecord` per such event, with the member subscription and assignment bytes
encoded by our own ``ConsumerProtocol`` encoder (version 3: topics, no user data, owned
partitions, generation, rack).

What a recording does not keep, and so the records cannot show: assignor user data (always
null here; a real ``cooperative-sticky`` or ``sticky`` member sends some) and, for groups
whose protocol type is not ``consumer``, the opaque subscription and assignment bytes
(empty here).
"""

from __future__ import annotations

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


def member_record(row: Mapping[str, Any], protocol_type: str | None) -> MemberRecord:
    """A snapshot member as the record holds it; ``consumer`` members' bytes are re-encoded."""
    subscription = assignment = b""
    if protocol_type == PROTOCOL_TYPE:
        generation = row.get("generation")
        sub = Subscription(topics=tuple(row.get("topics") or ()), owned_partitions=_tps(row.get("owned")),
                           generation_id=generation if isinstance(generation, int) and generation >= 0 else None,
                           rack_id=row.get("rack_id"))
        subscription = encode_subscription(sub)
        assignment = encode_assignment(Assignment(_tps(row.get("assignment"))))
    return MemberRecord(
        member_id=str(row.get("member_id")), group_instance_id=row.get("group_instance_id"),
        client_id=str(row.get("client_id") or ""), client_host=str(row.get("client_host") or ""),
        rebalance_timeout=int(row.get("rebalance_timeout_ms") or 0),
        session_timeout=int(row.get("session_timeout_ms") or 0),
        subscription=subscription, assignment=assignment,
    )


class RecordBuilder:
    """Folds events; :meth:`records` yields a record for every event that writes one."""

    def __init__(self) -> None:
        self._join_done: dict[tuple[str, int], int] = {}  # (group, generation) -> JOIN_COMPLETE ms
        self._protocol_type: dict[str, str] = {}

    def records(self, events: Iterable[Event]) -> Iterator[MetadataRecord]:
        for event in events:
            record = self.record(event)
            if record is not None:
                yield record

    def record(self, event: Event) -> MetadataRecord | None:
        group_id, kind = event.get("group_id"), event.get("event_type")
        if group_id is None:
            return None
        group = str(group_id)
        if event.get("protocol_type"):
            self._protocol_type[group] = str(event["protocol_type"])
        if kind == "JOIN_COMPLETE":
            self._join_done[(group, int(event.get("generation") or 0))] = epoch_ms(event)
        elif kind == "GENERATION_SNAPSHOT":
            return self._snapshot(group, event)
        elif kind == "GROUP_EMPTY" and event.get("reason_code") != "group_created":
            return self._empty(group, event)
        elif kind == "GROUP_DEAD":
            self._protocol_type.pop(group, None)
            return MetadataRecord(event, group, None)
        return None

    def _snapshot(self, group: str, event: Event) -> MetadataRecord:
        generation = int(event.get("generation") or 0)
        protocol_type = event.get("protocol_type") or self._protocol_type.get(group) or ""
        # currentStateTimestamp: the move into CompletingRebalance, i.e. the end of the join phase (§4.4)
        state_ts = self._join_done.get((group, generation), epoch_ms(event))
        value = {"protocolType": protocol_type, "generation": generation, "protocol": event.get("protocol"),
                 "leader": event.get("leader_id"), "currentStateTimestamp": state_ts}
        members = tuple(member_record(m, protocol_type) for m in event.get("members") or ())
        return MetadataRecord(event, group, value, members)

    def _empty(self, group: str, event: Event) -> MetadataRecord:
        value = {"protocolType": self._protocol_type.get(group, ""), "generation": int(event.get("generation") or 0),
                 "protocol": None, "leader": None, "currentStateTimestamp": epoch_ms(event)}
        return MetadataRecord(event, group, value)


# ---------------------------------------------------------------- JSON (the tools' converters)


def subscription_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolSubscriptionJsonConverter`` for a v3 subscription."""
    sub = decode_subscription(data)
    return {
        "topics": list(sub.topics),
        "userData": None,
        "ownedPartitions": [{"topic": t, "partitions": ps} for t, ps in grouped_by_topic(_rows(sub.owned_partitions))],
        "generationId": -1 if sub.generation_id is None else sub.generation_id,
        "rackId": sub.rack_id,
    }


def assignment_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolAssignmentJsonConverter``."""
    partitions = decode_assignment(data).partitions
    return {"assignedPartitions": [{"topic": t, "partitions": ps} for t, ps in grouped_by_topic(_rows(partitions))],
            "userData": None}


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
