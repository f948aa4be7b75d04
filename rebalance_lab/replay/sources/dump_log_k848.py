"""KIP-848 records of ``__consumer_offsets`` (keys 3-8) to events, best effort (the dump-log adapter's
table, :mod:`.dump_log`, says which record gives which event)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalance_lab.replay.sources.dump_log_values import BadRecord, Event, tps_of

_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

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
        "partitions": tps_of(value.get("assignedPartitions"), names, "topicId"),
        "partitions_pending_revocation": tps_of(value.get("partitionsPendingRevocation"), names, "topicId"),
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
        return _typed(mapper(key, value, names))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # int(1e400): OverflowError
        raise BadRecord("malformed KIP-848 record") from exc


_TEXTS = ("group_instance_id", "rack_id", "client_id", "client_host", "protocol")
_INTS = ("rebalance_timeout_ms", "session_timeout_ms")


def _typed(columns: Event | None) -> Event | None:
    """The columns if each has the type Kafka writes (the fold is compiled from its annotations and raises
    TypeError on another, where the pure Python carried on: rebalance_lab/compiled.py); else TypeError."""
    if columns is None:
        return None
    if "member_id" in columns and columns["member_id"].__class__ is not str:
        raise TypeError("memberId")
    for name in _TEXTS:
        if columns.get(name) is not None and columns[name].__class__ is not str:
            raise TypeError(name)
    for name in _INTS:
        if columns.get(name) is not None and columns[name].__class__ is not int:
            raise TypeError(name)
    subscription = columns.get("subscription")
    if subscription is not None and not all(topic.__class__ is str for topic in subscription["topics"]):
        raise TypeError("subscribedTopicNames")
    return columns


