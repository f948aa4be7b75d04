"""``kafka-dump-log.sh --offsets-decoder`` output of ``__consumer_offsets`` segments (spec §4.5) to events.

Two dump forms are read, line by line:

* Kafka >= 3.8 (``OffsetsMessageParser``): ``| offset: N CreateTime: MS … key: {"type":"2","data":{…}}
  payload: {"version":"3","data":{…}}``, with the ``consumer`` subscription and assignment already decoded
  to JSON (left as base64 when dump-log could not decode them: then our own codec decodes them,
  :mod:`rebalance_lab.protocol.consumer_protocol`). Keys may say ``"type"`` or ``"version"``, quoted or not.
* Kafka <= 3.7 (``GroupMetadataManager.formatRecordKeyAndValue``): ``key: group_metadata::group=G
  payload: {"protocolType":…,"protocol":…,"generationId":N,"assignment":"{m1=[t-0, t-1],m2=[t-2]}"}``.
  Only the protocol, generation and each member's partitions are there (no leader, client ids, hosts,
  timeouts, subscriptions, instance ids or currentStateTimestamp), so the snapshot is partial.

The record header is read tolerantly: ``offset: (\\d+)`` and ``(CreateTime|LogAppendTime): (-?\\d+)``
(field names and order vary by version). ``source_ref`` is ``__consumer_offsets-P@offset`` when P is known
from the input's name or its ``Dumping <path>`` header, else ``file:line``; ``coord_partition`` is P.

Mapping (``ts`` = the record's CreateTime, ``ts_kind`` ``record_create``, unless noted):

========================================  ===========================================================
record                                    events
========================================  ===========================================================
GroupMetadata (key 2), members            JOIN_COMPLETE at ``currentStateTimestamp`` (``ts_kind``
                                          ``current_state``: the end of the join phase, §4.4) with
                                          generation, prev_generation, protocol_type, protocol,
                                          leader_id, n_members, n_static; then GENERATION_SNAPSHOT
                                          (generation, protocol_type, protocol, leader_id, n_members,
                                          n_static, members[]: member_id, group_instance_id,
                                          client_id, client_host, rack_id, session_timeout_ms,
                                          rebalance_timeout_ms, topics, owned, generation (the
                                          subscription's generationId, -1 if absent), assignment)
GroupMetadata, no members                 GROUP_EMPTY at ``currentStateTimestamp`` (the move to Empty)
                                          instead of JOIN_COMPLETE, then the snapshot
GroupMetadata, currentStateTimestamp -1   the snapshot only (values v0/v1, and the <= 3.7 form)
GroupMetadata tombstone (``<DELETE>``)    GROUP_DEAD (generation null)
ConsumerGroupMetadata (3)                 K848_EPOCH_BUMP (generation = epoch); tombstone GROUP_DEAD
ConsumerGroupPartitionMetadata (4)        TOPIC_METADATA (topic_partitions {name: numPartitions});
                                          it also names topic ids for the records below
ConsumerGroupMemberMetadata (5)           MEMBER_JOINED (group_kind consumer; an upsert: written on
                                          join and on every metadata change): member_id,
                                          group_instance_id, rack_id, client_id, client_host,
                                          rebalance_timeout_ms, protocol (server assignor),
                                          subscription {topics, rack}, session_timeout_ms and
                                          supported_protocols for classic members; tombstone
                                          K848_MEMBER_LEFT
ConsumerGroupTargetAssignmentMetadata (6) K848_TARGET_COMPUTED (generation = assignment epoch; the
                                          assignor is not recorded)
ConsumerGroupCurrentMemberAssignment (8)  K848_MEMBER_STATE: member_id, generation = member epoch,
                                          prev_generation, raw = state name, partitions,
                                          partitions_pending_revocation (topic names when a key-4
                                          record named the ids earlier in the input, else the ids)
========================================  ===========================================================

Ignored: offset commits (keys 0/1, ``offset_commit::`` in the old form; classified from the key's first
bytes, never JSON-decoded), target-assignment members (7: the reached state is in key 8), tombstones of
4/6/7/8, share/stream/regex records (9+) and ``Unknown record type`` lines, transaction markers, header lines
(``Dumping …``, ``Log starting offset: …``, ``Starting offset: …``), ``baseOffset: …`` batch lines, blank
lines.

Unparsable: any other line; a record line without ``offset:`` or without ``key:`` (a cut line; with
``--offsets-decoder`` every data record prints its key); broken key or payload JSON; a key without
``data``; dump-log's own ``Error at offset … skipping`` lines; and, while still emitting the snapshot with
what is known, undecodable base64/consumer-protocol bytes and an unreadable old-form assignment string.

Limits: compaction keeps mostly the latest generation per group (§4.4). A GroupMetadata record written for a
static member replaced while Stable carries the time the group became Stable in ``currentStateTimestamp``,
so its JOIN_COMPLETE repeats the generation with a later time: take the earliest per generation.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from rebalance_lab.protocol.consumer_protocol import decode_assignment, decode_subscription
from rebalance_lab.replay.event_rows import SCHEMA_VERSION, tp
from rebalance_lab.replay.sources import Format, SourceContext, intern_columns, register
from rebalance_lab.replay.sources._log4j import first_head, starts_json

FORMAT_NAME = "dump-log"
SOURCE = "offsets_dumplog"

Event = dict[str, Any]
Bad = Callable[[str], None]  # report an undecodable part of a record that still yields events

_DECODER = json.JSONDecoder()
_RECORD = re.compile(r"\|? ?offset: (\d+)(?: .*?(?:CreateTime|LogAppendTime): (-?\d+))?")
_KEY_TYPE = re.compile(r'\{"(?:type|version)": ?"?(-?\d+)"?')
_OFFSETS_PARTITION = re.compile(r"__consumer_offsets-(\d+)")
_HEADERS = ("Dumping ", "Log starting offset:", "Starting offset:", "baseOffset: ")
_LEGACY_MEMBER = re.compile(r"(?:^\{|,)(.+?)=(?:\[([^\]]*)\](?::[0-9A-Fa-f]*)?|[0-9A-Fa-f]*)(?=,|\}$)")
_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}


class BadRecord(ValueError):
    """A record this adapter cannot use at all; the message is the report's reason."""


# --- GroupMetadataValue JSON (shared with console_json) ---------------------------------------------------------

def group_metadata_events(data: Any, base: Event, record_ts: int | None, bad: Bad) -> list[Event]:
    """JOIN_COMPLETE (or GROUP_EMPTY) at currentStateTimestamp, then GENERATION_SNAPSHOT.

    ``data`` is a GroupMetadataValue as the 4.x JSON converters print it; ``base`` holds the common
    columns; the snapshot is at ``record_ts`` (µs, ``record_create``) or, without one, at
    currentStateTimestamp (``current_state``).
    """
    if not isinstance(data, dict):
        raise BadRecord("malformed GroupMetadataValue")
    protocol_type = data.get("protocolType") or None
    consumer = protocol_type == "consumer"
    raw_members = data.get("members") or []
    if not isinstance(raw_members, list):
        raise BadRecord("malformed GroupMetadataValue")
    members = [_member(m, consumer, bad) for m in raw_members if isinstance(m, dict)]
    return _metadata_events(base, record_ts, members, protocol_type, data.get("generation"), data.get("protocol"),
                            data.get("leader"), data.get("currentStateTimestamp", -1))


def _metadata_events(base: Event, record_ts: int | None, members: list[dict[str, Any]], protocol_type: Any,
                     generation: Any, protocol: Any, leader: Any, state_ts: Any) -> list[Event]:
    """The events of a GroupMetadataValue whose members are read (both paths: :func:`group_metadata_events`
    and :meth:`_Parser.typed_group_metadata`)."""
    columns = {
        "generation": generation, "protocol_type": protocol_type, "protocol": _interned(protocol),
        "leader_id": _interned(leader), "n_members": len(members),
        "n_static": sum(1 for m in members if m["group_instance_id"] is not None),
    }
    out: list[Event] = []
    state_us = state_ts * 1000 if isinstance(state_ts, int) and state_ts >= 0 else None
    if state_us is not None:
        out.append(_join_end(base, state_us, columns))
    if record_ts is not None:
        out.append({**base, "ts": record_ts, "ts_kind": "record_create", "event_type": "GENERATION_SNAPSHOT",
                    **columns, "members": members})
    elif state_us is not None:
        out.append({**base, "ts": state_us, "ts_kind": "current_state", "event_type": "GENERATION_SNAPSHOT",
                    **columns, "members": members})
    else:
        raise BadRecord("no timestamp")
    return out


def _join_end(base: Event, ts: int, columns: dict[str, Any]) -> Event:
    if columns["n_members"] == 0:
        return {**base, "ts": ts, "ts_kind": "current_state", "event_type": "GROUP_EMPTY",
                "generation": columns["generation"], "protocol_type": columns["protocol_type"], "n_members": 0}
    generation = columns["generation"]
    return {**base, "ts": ts, "ts_kind": "current_state", "event_type": "JOIN_COMPLETE", **columns,
            "prev_generation": generation - 1 if isinstance(generation, int) else None}


def _member(m: dict[str, Any], consumer: bool, bad: Bad) -> dict[str, Any]:
    out: dict[str, Any] = {
        "member_id": _interned(m.get("memberId")), "group_instance_id": _interned(m.get("groupInstanceId")),
        "client_id": _interned(m.get("clientId")), "client_host": _interned(m.get("clientHost")), "rack_id": None,
        "session_timeout_ms": m.get("sessionTimeout"), "rebalance_timeout_ms": m.get("rebalanceTimeout"),
        "topics": None, "owned": None, "generation": None, "assignment": None,
    }
    if consumer:
        _subscription(m.get("subscription"), out, bad)
        out["assignment"] = assignment_tps(m.get("assignment"), bad)
    return out


def _interned(value: Any) -> Any:
    """A string the group's other records repeat (member ids, hosts), shared: it is pickled once per group."""
    return sys.intern(value) if isinstance(value, str) else value


def _subscription(value: Any, out: dict[str, Any], bad: Bad) -> None:
    """Decoded JSON (dump-log) or base64 bytes (console, or dump-log's fallback) into the member's columns."""
    if value is None:
        return
    if isinstance(value, str):
        try:
            sub = decode_subscription(base64.b64decode(value, validate=True))
        except (ValueError, AssertionError):
            bad("undecodable subscription")
            return
        out.update(topics=list(sub.topics), owned=[tp(t, p) for t, p in sub.owned_partitions],
                   generation=-1 if sub.generation_id is None else sub.generation_id, rack_id=sub.rack_id)
        return
    try:
        out.update(topics=[sys.intern(str(t)) for t in value.get("topics") or []],
                   owned=_tps(value.get("ownedPartitions")),
                   generation=int(value.get("generationId", -1)), rack_id=value.get("rackId"))
    except (AttributeError, TypeError, KeyError, ValueError):
        bad("malformed subscription")


def assignment_tps(value: Any, bad: Bad) -> list[dict[str, Any]] | None:
    """A member's assignment: decoded JSON, base64 bytes (empty bytes = nothing assigned) or absent."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value:
            return []
        try:
            return [tp(t, p) for t, p in decode_assignment(base64.b64decode(value, validate=True)).partitions]
        except (ValueError, AssertionError):
            bad("undecodable assignment")
            return None
    try:
        return _tps(value.get("assignedPartitions"))
    except (AttributeError, TypeError, KeyError, ValueError):
        bad("malformed assignment")
        return None


def _tps(groups: Any, names: dict[str, str] | None = None, key: str = "topic") -> list[dict[str, Any]]:
    """``[{"topic": t, "partitions": [0, 1]}]`` (or ``topicId``, renamed through ``names``) to tps."""
    out: list[dict[str, Any]] = []
    for group in groups or []:
        topic = sys.intern(str(group[key]))
        if names is not None:
            topic = names.get(topic, topic)
        out += [{"topic": topic, "partition": int(p)} for p in group["partitions"]]
    return out


# --- KIP-848 records (keys 3-8), best effort --------------------------------------------------------------------

def _k848_epoch(key: dict[str, Any], value: dict[str, Any] | None, names: dict[str, str]) -> Event | None:
    if value is None:
        return {"event_type": "GROUP_DEAD"}
    return {"event_type": "K848_EPOCH_BUMP", "generation": int(value["epoch"])}


def _k848_topics(key: dict[str, Any], value: dict[str, Any] | None, names: dict[str, str]) -> Event | None:
    if value is None:
        return None
    counts: dict[str, int] = {}
    for topic in value.get("topics") or []:
        names[str(topic["topicId"])] = str(topic["topicName"])
        counts[str(topic["topicName"])] = int(topic["numPartitions"])
    return {"event_type": "TOPIC_METADATA", "topic_partitions": counts}


def _k848_member(key: dict[str, Any], value: dict[str, Any] | None, names: dict[str, str]) -> Event | None:
    if value is None:
        return {"event_type": "K848_MEMBER_LEFT", "member_id": key["memberId"], "reason_code": "member_leave"}
    ev: Event = {
        "event_type": "MEMBER_JOINED", "member_id": key["memberId"], "group_instance_id": value.get("instanceId"),
        "rack_id": value.get("rackId"), "client_id": value.get("clientId"), "client_host": value.get("clientHost"),
        "rebalance_timeout_ms": value.get("rebalanceTimeoutMs"), "protocol": value.get("serverAssignor"),
        "subscription": {"topics": list(value.get("subscribedTopicNames") or []), "owned": None, "generation": None,
                         "rack": value.get("rackId")},
    }
    classic = value.get("classicMemberMetadata")
    if isinstance(classic, dict):
        ev["session_timeout_ms"] = classic.get("sessionTimeoutMs")
        ev["supported_protocols"] = [str(p["name"]) for p in classic.get("supportedProtocols") or []]
    return ev


def _k848_target(key: dict[str, Any], value: dict[str, Any] | None, names: dict[str, str]) -> Event | None:
    if value is None:
        return None
    return {"event_type": "K848_TARGET_COMPUTED", "generation": int(value["assignmentEpoch"])}


def _k848_assignment(key: dict[str, Any], value: dict[str, Any] | None, names: dict[str, str]) -> Event | None:
    if value is None:
        return None
    return {
        "event_type": "K848_MEMBER_STATE", "member_id": key["memberId"], "generation": int(value["memberEpoch"]),
        "prev_generation": int(value["previousMemberEpoch"]),
        "raw": _STATES.get(value.get("state", 127), str(value.get("state"))),
        "partitions": _tps(value.get("assignedPartitions"), names, "topicId"),
        "partitions_pending_revocation": _tps(value.get("partitionsPendingRevocation"), names, "topicId"),
    }


K848Mapper = Callable[[dict[str, Any], dict[str, Any] | None, dict[str, str]], Event | None]
_K848: dict[int, K848Mapper] = {
    3: _k848_epoch, 4: _k848_topics, 5: _k848_member, 6: _k848_target, 8: _k848_assignment,
}


def k848_event(kind: int, key: Any, value: Any, names: dict[str, str]) -> Event | None:
    """The columns of a KIP-848 record's event (group_kind consumer), None when it maps to nothing."""
    mapper = _K848.get(kind)
    if mapper is None:
        return None
    if not isinstance(key, dict) or (value is not None and not isinstance(value, dict)):
        raise BadRecord("malformed KIP-848 record")
    try:
        return mapper(key, value, names)
    except (KeyError, TypeError, ValueError) as exc:
        raise BadRecord("malformed KIP-848 record") from exc


def legacy_members(text: Any, bad: Bad) -> list[dict[str, Any]] | None:
    """The <= 3.7 ``assignment`` string ``{m1=[t-0, t-1],m2=[t-2]:USERDATAHEX}`` to member rows."""
    if not isinstance(text, str) or not text.startswith("{") or not text.endswith("}"):
        bad("unreadable assignment")
        return None
    members = []
    for m in _LEGACY_MEMBER.finditer(text):
        partitions = None
        if m[2] is not None:
            partitions = [_legacy_tp(item) for item in m[2].split(", ") if item]
        members.append({"member_id": sys.intern(m[1]), "group_instance_id": None, "client_id": None,
                        "client_host": None, "rack_id": None, "session_timeout_ms": None, "rebalance_timeout_ms": None,
                        "topics": None, "owned": None, "generation": None, "assignment": partitions})
    if not members and text != "{}":
        bad("unreadable assignment")
        return None
    return members


def _legacy_tp(text: str) -> dict[str, Any]:
    topic, _, number = text.rpartition("-")
    return tp(topic, int(number)) if topic and number.isdigit() else tp(text, -1)


# --- GroupMetadata records in the shape dump-log prints, typed (the fast path) ------------------------------------

class _Typed(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """The shape of a 3.8+ GroupMetadata record's key and value as dump-log prints them. Unknown fields are
    refused rather than skipped: every value then sits in a field of a given type, so what decodes here is a
    subset of what ``json`` reads, to the same values (a skipped field could hold what ``json`` refuses, such as
    a number too long to convert). A default stands for an absent field (older record versions print fewer) and
    is what the general path makes of its absence. The structs are never part of a cycle: no GC tracking."""


class _TopicPartitions(_Typed):
    topic: str
    partitions: list[int]


class _Subscription(_Typed):
    topics: tuple[str, ...] = ()  # a tuple: the key of the topic-list cache
    user_data: str | None = None
    # Partition lists are left undecoded (but checked to be JSON), each distinct text read once per input
    # (_GroupMetadataReader.tp_lists): a subscription's text also differs by its generation, and a member's
    # owned partitions can repeat an assignment text.
    owned_partitions: msgspec.Raw = msgspec.Raw(b"[]")
    generation_id: int = -1
    rack_id: str | None = None


class _Assignment(_Typed):
    assigned_partitions: msgspec.Raw = msgspec.Raw(b"[]")
    user_data: str | None = None


class _Member(_Typed):
    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    rebalance_timeout: int | None = None
    session_timeout: int | None = None
    # Left undecoded (but checked to be JSON): a group's records repeat them, so each distinct text is
    # decoded once per input (see _GroupMetadataReader). An absent one reads as null, as in the general path.
    subscription: msgspec.Raw = msgspec.Raw(b"null")
    assignment: msgspec.Raw = msgspec.Raw(b"null")


class _GroupMetadata(_Typed):
    protocol_type: str | None = None
    generation: int | None = None
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = -1
    members: list[_Member] | None = None


class _GroupMetadataValue(_Typed):
    data: _GroupMetadata
    version: str | int | None = None


class _GroupKeyData(_Typed):
    group: str


class _GroupKey(_Typed):
    data: _GroupKeyData
    kind: str | int | None = msgspec.field(default=None, name="type")  # the record type comes from _KEY_TYPE
    version: str | int | None = None


_GROUP_KEY = msgspec.json.Decoder(_GroupKey)
_GROUP_VALUE = msgspec.json.Decoder(_GroupMetadataValue)
_SUBSCRIPTION = msgspec.json.Decoder(_Subscription | str | None)  # a string: base64 (see _subscription)
_ASSIGNMENT = msgspec.json.Decoder(_Assignment | str | None)
_PARTITIONS = msgspec.json.Decoder(tuple[_TopicPartitions, ...])
_KEY_END = "} payload: {"
_UNSEEN: Any = object()  # not in a cache (where None is a value)

#: A subscription as its member columns (topics, owned, generation, rack_id), or what _subscription reads.
Subscription = tuple[list[str], list[dict[str, Any]], int, str | None] | str | None
#: An assignment's tps, or what assignment_tps reads.
Assignment = list[dict[str, Any]] | str | None
#: A member row still without its subscription and assignment columns, and what they are read from.
_Later = tuple[dict[str, Any], Subscription, Assignment]


class _GroupMetadataReader:
    """The fast path for the records that dominate a dump: GroupMetadata in the shape dump-log prints, decoded
    straight into typed structs (no intermediate dicts) with each distinct subscription and assignment text
    read once per input. What it does not take (None: a tombstone, another field or type, broken JSON) the
    general path reads, and reports as it must; nothing is reported before a record is taken.

    One tp dict per topic-partition, one list per distinct subscription topics and per distinct owned or
    assigned text are shared by every member row that has them: a group's snapshots repeat them (a member
    keeps its assignment across generations), and pickle then stores each once per group. Nothing changes
    them in place: rebalance_lab/replay only reads them, turns them into tuples or copies them.
    """

    def __init__(self) -> None:
        self.tps: dict[str, dict[int, dict[str, Any]]] = {}  # topic -> partition -> tp
        self.topic_lists: dict[tuple[str, ...], list[str]] = {}
        self.subscriptions: dict[bytes, Subscription] = {}  # JSON text -> its columns
        self.assignments: dict[bytes, Assignment] = {}
        self.tp_lists: dict[bytes, list[dict[str, Any]]] = {}  # owned or assigned partitions' JSON text -> tps

    def read(self, key_text: str) -> tuple[str, _GroupMetadata, list[dict[str, Any]], list[_Later]] | None:
        """(group, value, its member rows, the rows :meth:`finish` completes), or None if it is not in the shape.

        Splitting at the first ``} payload: {`` is safe: if the part before it decodes, it is exactly the key
        object that ``raw_decode`` would find (a ``} payload: {`` inside the group name leaves a broken key).
        """
        split = key_text.find(_KEY_END)
        if split < 0:
            return None
        try:
            group = _GROUP_KEY.decode(key_text[:split + 1]).data.group
            value = _GROUP_VALUE.decode(key_text[split + len(_KEY_END) - 1:]).data
            rows, later = self.rows(value.members or [], value.protocol_type == "consumer")
        except ValueError:  # msgspec's errors are ValueErrors, and so is a lone surrogate it cannot encode
            return None
        return group, value, rows, later

    def rows(self, members: list[_Member], consumer: bool) -> tuple[list[dict[str, Any]], list[_Later]]:
        """What :func:`_member` makes of each member, each subscription and assignment text decoded on its first
        occurrence. A consumer member whose subscription or assignment is not decoded JSON (base64, null) gets a
        row without them, listed for :meth:`finish`: what reads them may report, and nothing is reported before
        the whole record is taken (a later member can still send it to the general path).

        One loop builds each row in one dict display, its strings interned: this runs once per member of every
        snapshot, the bulk of a dump.
        """
        subscriptions, assignments, intern = self.subscriptions, self.assignments, sys.intern
        rows = []
        later: list[_Later] = []
        for m in members:
            text = bytes(m.subscription)
            sub = subscriptions.get(text, _UNSEEN)
            if sub is _UNSEEN:
                sub = subscriptions[text] = self.subscription(text)
            text = bytes(m.assignment)
            assigned = assignments.get(text, _UNSEEN)
            if assigned is _UNSEEN:
                assigned = assignments[text] = self.assignment(text)
            instance, client, host = m.group_instance_id, m.client_id, m.client_host
            if instance is not None:
                instance = intern(instance)
            if client is not None:
                client = intern(client)
            if host is not None:
                host = intern(host)
            if consumer and sub.__class__ is tuple and assigned.__class__ is list:
                topics, owned, generation, rack = sub
                rows.append({
                    "member_id": intern(m.member_id), "group_instance_id": instance, "client_id": client,
                    "client_host": host, "rack_id": rack, "session_timeout_ms": m.session_timeout,
                    "rebalance_timeout_ms": m.rebalance_timeout, "topics": topics, "owned": owned,
                    "generation": generation, "assignment": assigned,
                })
                continue
            row: dict[str, Any] = {
                "member_id": intern(m.member_id), "group_instance_id": instance, "client_id": client,
                "client_host": host, "rack_id": None, "session_timeout_ms": m.session_timeout,
                "rebalance_timeout_ms": m.rebalance_timeout, "topics": None, "owned": None, "generation": None,
                "assignment": None,
            }
            rows.append(row)
            if consumer:
                later.append((row, sub, assigned))
        return rows, later

    @staticmethod
    def finish(later: list[_Later], bad: Bad) -> None:
        """The subscription and assignment columns of the rows :meth:`rows` left, in member order, reporting
        what cannot be read."""
        for row, sub, assigned in later:
            if sub.__class__ is tuple:
                row["topics"], row["owned"], row["generation"], row["rack_id"] = sub
            else:
                _subscription(sub, row, bad)
            row["assignment"] = assigned if assigned.__class__ is list else assignment_tps(assigned, bad)

    def subscription(self, text: bytes) -> Subscription:
        value: _Subscription | str | None = _SUBSCRIPTION.decode(text)
        if not isinstance(value, _Subscription):
            return value
        return (self.topic_list(value.topics), self.partitions(value.owned_partitions), value.generation_id,
                value.rack_id)

    def assignment(self, text: bytes) -> Assignment:
        value: _Assignment | str | None = _ASSIGNMENT.decode(text)
        return self.partitions(value.assigned_partitions) if isinstance(value, _Assignment) else value

    def topic_list(self, topics: tuple[str, ...]) -> list[str]:
        found = self.topic_lists.get(topics)
        if found is None:
            found = self.topic_lists[topics] = [sys.intern(t) for t in topics]
        return found

    def partitions(self, raw: msgspec.Raw) -> list[dict[str, Any]]:
        """The tps of a ``[{"topic": t, "partitions": [0, 1]}]`` text, decoded on its first occurrence."""
        text = bytes(raw)
        found = self.tp_lists.get(text)
        if found is None:
            found = self.tp_lists[text] = self.tp_list(_PARTITIONS.decode(text))
        return found

    def tp_list(self, groups: tuple[_TopicPartitions, ...]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for group in groups:
            row = self.tps.get(group.topic)
            if row is None:
                row = self.tps[group.topic] = {}
            size = len(found)
            try:
                found.extend(map(row.__getitem__, group.partitions))  # no Python frame, no list per group
            except KeyError:  # a partition not seen yet in this input: start the group again
                del found[size:]
                topic = sys.intern(group.topic)
                found += [row.get(p) or row.setdefault(p, {"topic": topic, "partition": p}) for p in group.partitions]
        return found


# --- the parser -----------------------------------------------------------------------------------------------------

class _Parser:
    def __init__(self, ctx: SourceContext) -> None:
        self.ctx = ctx
        self.report = ctx.report
        found = _OFFSETS_PARTITION.search(ctx.name)
        self.partition: int | None = int(found[1]) if found else None
        self.names: dict[str, str] = {}  # KIP-848 topic id -> name
        self.number = 0
        self.line = ""
        self.fast = _GroupMetadataReader()

    def run(self, lines: Iterable[str]) -> Iterator[Event]:
        # Lines and events are counted locally and added once (also when the consumer stops early).
        report = self.report
        number = produced = 0
        try:
            for number, raw in enumerate(lines, 1):
                self.number, self.line = number, raw.rstrip("\r\n")
                try:
                    events = self.one(self.line.lstrip())
                except BadRecord as exc:
                    report.unparsable(self.ctx.ref(number), str(exc), self.line)
                    continue
                if not events:
                    report.ignore()
                produced += len(events)
                yield from events
        finally:
            report.line(number)
            report.event(FORMAT_NAME, produced)

    def bad(self, reason: str) -> None:
        self.report.unparsable(self.ctx.ref(self.number), reason, self.line)

    def one(self, text: str) -> list[Event]:
        if text.startswith(("| offset: ", "offset: ")):
            return self.record(text)
        if not text:
            return []
        if text.startswith(_HEADERS):
            if text.startswith("Dumping "):
                found = _OFFSETS_PARTITION.search(text)
                self.partition = int(found[1]) if found else None
            return []
        raise BadRecord("not a dump-log line")

    def record(self, text: str) -> list[Event]:
        header = _RECORD.match(text)
        if header is None:
            raise BadRecord("malformed record header")
        at = text.find(" key: ")
        if at < 0:
            if " endTxnMarker: " in text:
                return []  # a transaction marker (control record)
            raise BadRecord("record without a key (truncated line?)")
        key_text = text[at + 6:]
        offset = int(header[1])
        ts = int(header[2]) * 1000 if header[2] is not None and int(header[2]) >= 0 else None
        if key_text.startswith("{"):
            return self.json_record(key_text, offset, ts)
        if key_text.startswith("group_metadata::group="):
            return self.legacy_record(key_text, offset, ts)
        if key_text.startswith(("offset_commit::", "Unknown record type")):
            return []
        if key_text.startswith("Error at offset"):
            raise BadRecord("dump-log could not decode the record")
        raise BadRecord("unknown key")

    def base(self, offset: int, group: Any, kind: str) -> Event:
        if not isinstance(group, str):
            raise BadRecord("key without a group")
        ref = (f"__consumer_offsets-{self.partition}@{offset}" if self.partition is not None
               else self.ctx.ref(self.number))
        return {"schema_version": SCHEMA_VERSION, "source": SOURCE, "source_ref": ref, "seq": self.number,
                "cluster_id": self.ctx.cluster_id, "broker_id": self.ctx.broker_id, "coord_partition": self.partition,
                "group_id": sys.intern(group), "group_kind": kind}

    def json_record(self, key_text: str, offset: int, ts: int | None) -> list[Event]:
        kind_match = _KEY_TYPE.match(key_text)
        kind = int(kind_match[1]) if kind_match else -1
        if kind in (0, 1) or kind > 8:
            return []  # offset commits and records out of scope: never JSON-decoded
        if kind == 2:
            events = self.typed_group_metadata(key_text, offset, ts)
            if events is not None:
                return events
        try:
            key, end = _DECODER.raw_decode(key_text)
            value = _payload(key_text[end:])
        except ValueError as exc:
            raise BadRecord("broken JSON") from exc
        if kind < 0:  # "type" was not the first field
            kind = key_type(key)
            if kind in (0, 1) or kind > 8:
                return []
        data = key.get("data") if isinstance(key, dict) else None
        if kind < 0 or not isinstance(data, dict):
            raise BadRecord("unknown key")
        if kind == 2:
            return self.group_metadata(offset, data.get("group"), value, ts)
        return self.k848(kind, offset, data, value, ts)

    def typed_group_metadata(self, key_text: str, offset: int, ts: int | None) -> list[Event] | None:
        """The events of a GroupMetadata record the fast path takes, else None (see _GroupMetadataReader)."""
        read = self.fast.read(key_text)
        if read is None:
            return None
        group, value, members, later = read
        if later:
            self.fast.finish(later, self.bad)
        protocol_type = value.protocol_type or None
        return _metadata_events(self.base(offset, group, "classic"), ts, members, protocol_type, value.generation,
                                value.protocol, value.leader, value.current_state_timestamp)

    def group_metadata(self, offset: int, group: Any, value: Any, ts: int | None) -> list[Event]:
        base = self.base(offset, group, "classic")
        if value is None:
            if ts is None:
                raise BadRecord("no timestamp")
            return [{**base, "ts": ts, "ts_kind": "record_create", "event_type": "GROUP_DEAD"}]
        return group_metadata_events(_data(value), base, ts, self.bad)

    def k848(self, kind: int, offset: int, key: dict[str, Any], value: Any, ts: int | None) -> list[Event]:
        columns = k848_event(kind, key, None if value is None else _data(value), self.names)
        if columns is None:
            return []
        if ts is None:
            raise BadRecord("no timestamp")
        return [intern_columns({**self.base(offset, key.get("groupId"), "consumer"), "ts": ts,
                                "ts_kind": "record_create", **columns})]

    def legacy_record(self, key_text: str, offset: int, ts: int | None) -> list[Event]:
        at = key_text.find(" payload: ")
        if at < 0:
            raise BadRecord("record without payload")
        base = self.base(offset, key_text[len("group_metadata::group="):at], "classic")
        if ts is None:
            raise BadRecord("no timestamp")
        payload = key_text[at + 10:]
        if payload == "<DELETE>":
            return [{**base, "ts": ts, "ts_kind": "record_create", "event_type": "GROUP_DEAD"}]
        try:
            value = json.loads(payload)
        except ValueError as exc:
            raise BadRecord("broken JSON") from exc
        if not isinstance(value, dict):
            raise BadRecord("malformed GroupMetadataValue")
        members = legacy_members(value.get("assignment"), self.bad)
        return [{**base, "ts": ts, "ts_kind": "record_create", "event_type": "GENERATION_SNAPSHOT",
                 "generation": value.get("generationId"), "protocol_type": value.get("protocolType") or None,
                 "protocol": _interned(value.get("protocol")),
                 "n_members": None if members is None else len(members), "members": members}]


def key_type(key: Any) -> int:
    """The record type of a decoded key (``"type"`` or ``"version"``, number or string); -1 if none."""
    if not isinstance(key, dict):
        return -1
    value = key.get("type", key.get("version"))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return -1


def _payload(rest: str) -> Any:
    """The value after the key: parsed JSON, or None for a tombstone (``<DELETE>``)."""
    if not rest.startswith(" payload: "):
        raise ValueError("no payload")
    text = rest[10:]
    if text == "<DELETE>":
        return None
    return json.loads(text)


def _data(value: Any) -> Any:
    """``{"version": "3", "data": {...}}`` to its data."""
    if not isinstance(value, dict) or "data" not in value:
        raise BadRecord("malformed value")
    return value["data"]


def parse(lines: Iterable[str], ctx: SourceContext) -> Iterator[Event]:
    return _Parser(ctx).run(lines)


def is_dump_line(text: str) -> bool:
    return text.lstrip().startswith(("| offset: ", "offset: ", *_HEADERS))


def sniff(lines: list[str]) -> bool:
    return not starts_json(lines) and is_dump_line(first_head(lines))


FORMAT = register(Format(
    name=FORMAT_NAME, source=SOURCE, parse=parse, sniff=sniff,
    description="kafka-dump-log.sh --offsets-decoder output of __consumer_offsets segments (3.8+ JSON, <= 3.7 text)",
    interns=True,  # group ids in base(), leader and protocol in _metadata_events, KIP-848 and old-form records
))
