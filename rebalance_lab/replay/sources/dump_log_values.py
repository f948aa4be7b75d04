"""GroupMetadataValue records as JSON (dump-log's 3.8+ form and kafka-console-consumer's) to events.

The general reader of the dump-log adapter (:mod:`.dump_log`, whose docstring maps each record to its
events), shared with the console adapter (:mod:`.console_json`): JOIN_COMPLETE or GROUP_EMPTY at
``currentStateTimestamp`` and the GENERATION_SNAPSHOT with every member's subscription and assignment
(decoded JSON, or base64 consumer-protocol bytes our own codec decodes), and the members of the <= 3.7
text form.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from rebalance_lab.protocol.consumer_protocol import decode_assignment, decode_subscription
from rebalance_lab.replay.event_rows import tp

Event = dict[str, Any]
Bad = Callable[[str], None]  # report an undecodable part of a record that still yields events

_LEGACY_MEMBER = re.compile(r"(?:^\{|,)(.+?)=(?:\[([^\]]*)\](?::[0-9A-Fa-f]*)?|[0-9A-Fa-f]*)(?=,|\}$)")


#: Kafka's partition ids are int32 (ConsumerProtocolAssignment's ``Partitions``: ``[]int32``), never negative.
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
#: Record and state times are int64 milliseconds; one past it is a damaged number (its µs overflow a float).
INT64_MAX = 2**63 - 1


class BadRecord(ValueError):
    """A record this adapter cannot use at all; the message is the report's reason."""


def no_lone_surrogate(text: str, *decoded: Any) -> None:
    """BadRecord if the JSON ``text`` escapes half a UTF-16 surrogate pair (``\\ud800``) into a string: Kafka's
    strings are UTF-8, which cannot hold one, and the what-if's Java string hash raised UnicodeEncodeError on it."""
    if "\\ud" not in text and "\\uD" not in text:
        return  # the input was decoded from UTF-8 with replacement: only an escape can make one
    try:
        json.dumps(decoded, ensure_ascii=False).encode()
    except UnicodeEncodeError as exc:
        raise BadRecord("malformed string (a lone UTF-16 surrogate)") from exc


def group_metadata_events(data: Any, base: Event, record_ts: int | None, bad: Bad) -> list[Event]:
    """JOIN_COMPLETE (or GROUP_EMPTY) at currentStateTimestamp, then GENERATION_SNAPSHOT.

    ``data`` is a GroupMetadataValue as the 4.x JSON converters print it; ``base`` holds the common
    columns; the snapshot is at ``record_ts`` (µs, ``record_create``) or, without one, at
    currentStateTimestamp (``current_state``).
    """
    if not isinstance(data, dict):
        raise BadRecord("malformed GroupMetadataValue")
    protocol_type = text_field(data, "protocolType", bad) or None
    consumer = protocol_type == "consumer"
    raw_members = data.get("members") or []
    if not isinstance(raw_members, list):
        raise BadRecord("malformed GroupMetadataValue")
    members = [row for row in (_member(m, consumer, bad) for m in raw_members if isinstance(m, dict)) if row]
    return metadata_events(base, record_ts, members, protocol_type, int_field(data, "generation", bad),
                            text_field(data, "protocol", bad), text_field(data, "leader", bad),
                            data.get("currentStateTimestamp", -1))


def text_field(record: dict[str, Any], name: str, bad: Bad) -> str | None:
    """A string field of a record (null or absent: None); a value of another type is reported and read as absent.

    The fold downstream is compiled from its annotations (rebalance_lab/compiled.py): a number or a list where
    Kafka writes a string would make it raise TypeError and lose the group, where the pure Python carried on.
    """
    value = record.get(name)
    if value is None or value.__class__ is str:
        return value
    bad(f"malformed {name}")
    return None


def int_field(record: dict[str, Any], name: str, bad: Bad) -> int | None:
    """An integer field of a record, as :func:`text_field` (a bool, float or string is not one)."""
    value = record.get(name)
    if value is None or value.__class__ is int:
        return value
    bad(f"malformed {name}")
    return None


def metadata_events(base: Event, record_ts: int | None, members: list[Any], protocol_type: Any,
                     generation: Any, protocol: Any, leader: Any, state_ts: Any) -> list[Event]:
    """The events of a GroupMetadataValue whose members are read (both paths: :func:`group_metadata_events`
    and :meth:`_Parser.typed_group_metadata`); a member row is a dict or, from the fast path for the Spark
    tasks (``SourceContext.compact_members``), a tuple (:mod:`rebalance_lab.replay.member_rows`)."""
    columns = {
        "generation": generation, "protocol_type": protocol_type, "protocol": interned(protocol),
        "leader_id": interned(leader), "n_members": len(members),
        "n_static": sum(1 for m in members if (m[1] if m.__class__ is tuple else m["group_instance_id"]) is not None),
    }
    out: list[Event] = []
    state_us = state_ts * 1000 if state_ts.__class__ is int and 0 <= state_ts <= INT64_MAX else None
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


def _member(m: dict[str, Any], consumer: bool, bad: Bad) -> dict[str, Any] | None:
    """The member's row; None (reported) for a member without a string id, which no event could name."""
    member_id = m.get("memberId")
    if member_id.__class__ is not str:
        bad("member without an id")
        return None
    out: dict[str, Any] = {
        "member_id": sys.intern(member_id), "group_instance_id": interned(text_field(m, "groupInstanceId", bad)),
        "client_id": interned(text_field(m, "clientId", bad)),
        "client_host": interned(text_field(m, "clientHost", bad)), "rack_id": None,
        "session_timeout_ms": int_field(m, "sessionTimeout", bad),
        "rebalance_timeout_ms": int_field(m, "rebalanceTimeout", bad),
        "topics": None, "owned": None, "generation": None, "assignment": None,
    }
    if consumer:
        subscription_columns(m.get("subscription"), out, bad)
        out["assignment"] = assignment_tps(m.get("assignment"), bad)
    return out


def interned(value: Any) -> Any:
    """A string the group's other records repeat (member ids, hosts), shared: it is pickled once per group."""
    return sys.intern(value) if isinstance(value, str) else value


def subscription_columns(value: Any, out: dict[str, Any], bad: Bad) -> None:
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
        rack = value.get("rackId")
        if rack is not None and rack.__class__ is not str:
            raise TypeError("rackId")
        generation = int(value.get("generationId", -1))
        if not INT32_MIN <= generation <= INT32_MAX:  # an int32; the what-if packs it into the member's user data
            raise ValueError("generationId")
        out.update(topics=[sys.intern(str(t)) for t in value.get("topics") or []],
                   owned=tps_of(value.get("ownedPartitions")), generation=generation, rack_id=rack)
    except (AttributeError, TypeError, KeyError, ValueError, OverflowError):  # int(1e400): OverflowError
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
        return tps_of(value.get("assignedPartitions"))
    except (AttributeError, TypeError, KeyError, ValueError):
        bad("malformed assignment")
        return None


def tps_of(groups: Any, names: dict[str, str] | None = None, key: str = "topic") -> list[dict[str, Any]]:
    """``[{"topic": t, "partitions": [0, 1]}]`` (or ``topicId``, renamed through ``names``) to tps."""
    out: list[dict[str, Any]] = []
    for group in groups or []:
        topic = sys.intern(str(group[key]))
        if names is not None:
            topic = names.get(topic, topic)
        out += [{"topic": topic, "partition": partition(p)} for p in group["partitions"]]
    return out




def partition(value: Any) -> int:
    """A partition id; ValueError outside 0..2**31-1: the what-if would make a topic of as many partitions as
    the highest one recorded says exist (a damaged ``1111…`` made it run for ever)."""
    if value.__class__ is not int or not 0 <= value <= INT32_MAX:
        raise ValueError(f"partition {value!r:.40} is not an int32 partition id")
    return value



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
    if topic and number.isascii() and number.isdigit() and len(number) <= 10 and int(number) <= INT32_MAX:
        return tp(topic, int(number))
    return tp(text, -1)


