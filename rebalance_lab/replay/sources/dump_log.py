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

The code: this module reads the lines and records and picks the reader; :mod:`.dump_log_fast` decodes
GroupMetadata records straight into typed structs (most of a dump), :mod:`.dump_log_values` reads any
GroupMetadataValue JSON and the <= 3.7 form (also for :mod:`.console_json`), :mod:`.dump_log_k848` the
KIP-848 records.
"""


from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from rebalance_lab.replay.event_rows import SCHEMA_VERSION
from rebalance_lab.replay.sources import Format, SourceContext, intern_columns, register
from rebalance_lab.replay.sources._log4j import first_head, starts_json
from rebalance_lab.replay.sources.dump_log_fast import GroupMetadataReader
from rebalance_lab.replay.sources.dump_log_k848 import k848_event
from rebalance_lab.replay.sources.dump_log_values import (
    INT64_MAX,
    BadRecord,
    Event,
    group_metadata_events,
    int_field,
    interned,
    legacy_members,
    metadata_events,
    no_lone_surrogate,
    text_field,
)

FORMAT_NAME = "dump-log"
SOURCE = "offsets_dumplog"

_DECODER = json.JSONDecoder()
_RECORD = re.compile(r"\|? ?offset: (\d+)(?: .*?(?:CreateTime|LogAppendTime): (-?\d+))?")
_KEY_TYPE = re.compile(r'\{"(?:type|version)": ?"?(-?\d+)"?')
_OFFSETS_PARTITION = re.compile(r"__consumer_offsets-(\d+)")
_HEADERS = ("Dumping ", "Log starting offset:", "Starting offset:", "baseOffset: ")


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
        self.fast = GroupMetadataReader(compact=ctx.compact_members)

    def run(self, lines: Iterable[str]) -> Iterator[Event]:
        # Lines and events are counted locally and added once (also when the consumer stops early).
        report = self.report
        number = produced = 0
        try:
            for number, raw in enumerate(lines, 1):
                self.number, self.line = number, raw.rstrip("\r\n")
                try:
                    events = self.one(self.line.lstrip())
                except ValueError as exc:  # BadRecord, or int() of a number of more than 4,300 digits
                    reason = str(exc) if isinstance(exc, BadRecord) else "malformed number"
                    report.unparsable(self.ctx.ref(number), reason, self.line)
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
        stamp = int(header[2]) if header[2] is not None else -1
        if stamp > INT64_MAX:  # Kafka's record times are int64 ms; µs past 2**63 ms overflow a float in the replay
            raise BadRecord("malformed record header")
        ts = stamp * 1000 if stamp >= 0 else None
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
        no_lone_surrogate(key_text, key, value)
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
        """The events of a GroupMetadata record the fast path takes, else None (see GroupMetadataReader)."""
        read = self.fast.read(key_text)
        if read is None:
            return None
        group, value, members, later = read
        if later:
            members = self.fast.finish(members, later, self.bad)
        protocol_type = value.protocol_type or None
        return metadata_events(self.base(offset, group, "classic"), ts, members, protocol_type, value.generation,
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
        no_lone_surrogate(payload, value)
        if not isinstance(value, dict):
            raise BadRecord("malformed GroupMetadataValue")
        members = legacy_members(value.get("assignment"), self.bad)
        return [{**base, "ts": ts, "ts_kind": "record_create", "event_type": "GENERATION_SNAPSHOT",
                 "generation": int_field(value, "generationId", self.bad),
                 "protocol_type": text_field(value, "protocolType", self.bad) or None,
                 "protocol": interned(text_field(value, "protocol", self.bad)),
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
    interns=True,  # group ids in base(), leader and protocol in metadata_events, KIP-848 and old-form records
))
