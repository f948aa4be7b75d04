"""Turn a decoded response into plain, broker-independent data.

* member ids become aliases: ``<a>`` for the first id member ``a`` was given,
  ``<a#2>`` for its second (e.g. after a static replacement), ``<?1>`` for ids no
  scenario member ever received; ids the scenario wrote literally stay as written;
* group ids and topic names lose their per-run suffix, inside subscription and
  assignment bytes too;
* error codes become names; throttle times are dropped;
* hosts, ports and node ids (which differ between an emulator and a container) become
  placeholders;
* byte fields become hex; assignments and consumer subscriptions a readable form when
  that form is exact;
* member lists that a broker orders by hash (JoinGroup leader list, DescribeGroups) are
  sorted by alias, DeleteGroups results by group, and ListGroups keeps only this
  scenario's groups.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode

_DROP = frozenset({"throttle_time_ms"})
_ID_KEYS = frozenset({"member_id", "leader"})
_GROUP_KEYS = frozenset({"group_id"})
_PLACEHOLDERS = {"host": "<host>", "client_host": "<host>", "port": "<port>", "node_id": "<node>"}
_ASSIGNMENT_KEYS = frozenset({"assignment", "member_assignment"})
_SUBSCRIPTION_KEYS = frozenset({"metadata", "member_metadata"})
Rename = Callable[[str], str]
_SORTED_MEMBERS_APIS = frozenset({"JoinGroup", "DescribeGroups", "ConsumerGroupDescribe"})
# KIP-848: assignments are {TopicPartitions: [{TopicId, (TopicName,) Partitions}]} in Java hash order
_CG_ASSIGNMENT_KEYS = frozenset({"assignment", "target_assignment"})
_TEXT_KEYS = frozenset({"error_message", "subscribed_topic_regex"})


@dataclass
class Identities:
    """Member id <-> alias bookkeeping for one scenario run."""

    labels: dict[str, str] = field(default_factory=dict)
    current: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _unknown: int = 0

    def learn(self, alias: str, member_id: str) -> None:
        if not member_id:
            return
        if member_id not in self.labels:
            n = self._counts.get(alias, 0) + 1
            self._counts[alias] = n
            self.labels[member_id] = f"<{alias}>" if n == 1 else f"<{alias}#{n}>"
        if self.labels[member_id].startswith(f"<{alias}"):
            self.current[alias] = member_id

    def literal(self, member_id: str) -> None:
        """An id written in the scenario itself (e.g. ``unknown-member-id``) stays as is."""
        self.labels.setdefault(member_id, member_id)

    def label(self, member_id: str) -> str:
        if not member_id:
            return member_id
        if member_id not in self.labels:
            self._unknown += 1
            self.labels[member_id] = f"<?{self._unknown}>"
        return self.labels[member_id]


@dataclass
class Normaliser:
    identities: Identities
    groups: Mapping[str, str]  # actual group id -> scenario name
    topics: Mapping[str, str] = field(default_factory=dict)  # actual topic name -> scenario name
    topic_ids: Mapping[uuid.UUID, str] = field(default_factory=dict)  # topic id -> scenario name
    suffix: str = ""  # the run's suffix of group ids, topic names and regexes

    def _topic(self, name: str) -> str:
        return self.topics.get(name, name)

    def response(self, api: str, raw: Mapping[str, Any], sort_topics: bool = False) -> dict[str, Any]:
        out = self._mapping(api, raw)
        if api == "JoinGroup" and out.get("error_code") == "NONE":
            out = _with_is_leader(out)
        if api == "ListGroups":
            out["groups"] = sorted(
                (g for g in out.get("groups", []) if g.get("group_id") in self.groups.values()),
                key=lambda g: str(g.get("group_id")),
            )
        if api == "DeleteGroups" and isinstance(out.get("results"), list):
            # both coordinators answer in hash order of the actual (per-run suffixed) ids
            out["results"] = sorted(out["results"], key=lambda r: str(r.get("group_id", "")))
        if sort_topics:
            _sort_topics(out)
        return out

    def _mapping(self, api: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key in _DROP:
                continue
            out[key] = self._value(api, key, value)
        if api in _SORTED_MEMBERS_APIS and isinstance(out.get("members"), list):
            out["members"] = sorted(out["members"], key=lambda m: str(m.get("member_id", "")))
        return out

    def _value(self, api: str, key: str, value: Any) -> Any:
        if key in _CG_ASSIGNMENT_KEYS and isinstance(value, Mapping) and "topic_partitions" in value:
            return self._cg_assignment(value["topic_partitions"])
        if key == "subscribed_topic_names" and isinstance(value, list):
            return sorted(self._topic(str(t)) for t in value)  # a Java HashSet on the broker
        if isinstance(value, Mapping):
            return self._mapping(api, value)
        if isinstance(value, list | tuple):
            return [self._value(api, key, v) for v in value]
        if isinstance(value, set | frozenset):
            return bitfield(value) if key.endswith("authorized_operations") else sorted(value)
        return self._scalar(api, key, value)

    def _scalar(self, api: str, key: str, value: Any) -> Any:
        if key.endswith("authorized_operations"):
            return bitfield(value)
        if key.endswith("error_code") and isinstance(value, int):
            return error_name(value)
        if key in _ID_KEYS and isinstance(value, str):
            return self.identities.label(value)
        if (key in _GROUP_KEYS or (api == "FindCoordinator" and key == "key")) and isinstance(value, str):
            return self.groups.get(value, value)
        if key in _PLACEHOLDERS and (api == "FindCoordinator" or key == "client_host"):
            return _PLACEHOLDERS[key]
        if key == "name" and isinstance(value, str):
            return self._topic(value)
        if key == "topic_id" and isinstance(value, uuid.UUID):
            return self._topic_id(value)
        if key in _TEXT_KEYS and isinstance(value, str):
            return self._text(value)
        if isinstance(value, bytes | bytearray):
            return self._bytes(key, bytes(value))
        return value

    def _topic_id(self, topic_id: uuid.UUID) -> str:
        return self.topic_ids.get(topic_id) or ("<zero uuid>" if topic_id.int == 0 else "<unknown topic id>")

    def _cg_assignment(self, topic_partitions: list[Any]) -> str:
        """``foo:[0, 1] bar:[2]``, topics by name and partitions sorted: the broker's order is Java
        hash order; ``""`` for an empty assignment (null stays null)."""
        out: dict[str, list[int]] = {}
        for item in topic_partitions:
            topic_id = item.get("topic_id")
            name = self.topic_ids.get(topic_id) if isinstance(topic_id, uuid.UUID) else None
            if name is None:
                name = self._topic(str(item["topic_name"])) if item.get("topic_name") else self._topic_id(topic_id)
            out.setdefault(name, []).extend(int(p) for p in item.get("partitions") or ())
        return " ".join(f"{name}:{sorted(out[name])}" for name in sorted(out))

    def _text(self, text: str) -> str:
        """Error messages and regexes name groups, topics and member ids: the run's suffix goes,
        ids the coordinator made become their labels."""
        if self.suffix:
            text = text.replace(self.suffix, "")
        for member_id, label in self.identities.labels.items():
            if member_id and label != member_id and member_id in text:
                text = text.replace(member_id, label)
        return text

    def _bytes(self, key: str, raw: bytes) -> str:
        if key in _ASSIGNMENT_KEYS:
            return assignment_text(raw, self._topic)
        if key in _SUBSCRIPTION_KEYS:
            return subscription_text(raw, self._topic)
        return raw.hex()


def bitfield(value: Any) -> Any:
    """kafka-python decodes a 32-bit operations bit field as a set of bit numbers (None for
    INT_MIN, "not requested"); show the int the broker sent, as the spec writes it."""
    if value is None:
        return -(1 << 31)
    if isinstance(value, set | frozenset):
        raw = sum(1 << bit for bit in value)
        return raw - (1 << 32) if raw & 0x80000000 else raw
    return value


def error_name(code: int) -> str | int:
    try:
        return ErrorCode(code).name
    except ValueError:
        return code


def _same(name: str) -> str:
    return name


def _version(raw: bytes) -> int:
    return int.from_bytes(raw[:2], "big", signed=True)


def assignment_text(raw: bytes, rename: Rename = _same) -> str:
    """``v3 t:[0,1] u:[2]`` when that reading re-encodes to the same bytes, else hex."""
    if not raw:
        return ""
    try:
        decoded = cp.decode_assignment(raw)
        version = _version(raw)
        exact = cp.encode_assignment(decoded, version) == raw
    except (cp.ConsumerProtocolError, ValueError):
        exact = False
    if not exact:
        return "hex:" + raw.hex()
    text = f"v{version} " + " ".join(f"{rename(t)}:{ps}" for t, ps in _grouped(decoded.partitions))
    if decoded.user_data is not None:
        text += f" user_data={decoded.user_data.hex()}"
    return text.strip()


def subscription_text(raw: bytes, rename: Rename = _same) -> str:
    """``v3 topics=[t] user_data=null owned=[] generation=-1 rack=null`` (fields as the
    version has them) when that reading re-encodes to the same bytes, else hex."""
    if not raw:
        return ""
    try:
        decoded = cp.decode_subscription(raw)
        version = _version(raw)
        exact = 0 <= version <= cp.HIGHEST_VERSION and cp.encode_subscription(decoded, version) == raw
    except (cp.ConsumerProtocolError, ValueError):
        exact = False
    if not exact:
        return raw.hex()
    parts = [f"v{version}", f"topics=[{', '.join(rename(t) for t in decoded.topics)}]",
             "user_data=" + ("null" if decoded.user_data is None else decoded.user_data.hex())]
    if version >= 1:
        owned = " ".join(f"{rename(t)}:{ps}" for t, ps in _grouped(decoded.owned_partitions))
        parts.append(f"owned=[{owned}]")
    if version >= 2:
        parts.append(f"generation={-1 if decoded.generation_id is None else decoded.generation_id}")
    if version >= 3:
        parts.append(f"rack={decoded.rack_id or 'null'}")
    return " ".join(parts)


def _grouped(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    groups: dict[str, list[int]] = {}
    for topic, partition in partitions:
        groups.setdefault(topic, []).append(partition)
    return list(groups.items())


def _with_is_leader(out: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in out.items():
        result[key] = value
        if key == "leader":
            result["is_leader"] = value == out.get("member_id")
    return result


def _sort_topics(out: dict[str, Any]) -> None:
    """OffsetFetch of "all topics" (both coordinators) and OffsetCommit (Scala) answer in
    hash order."""
    for holder in [out, *out.get("groups", [])]:
        topics = holder.get("topics")
        if isinstance(topics, list):
            for topic in topics:
                topic.get("partitions", []).sort(key=lambda p: p.get("partition_index", 0))
            topics.sort(key=lambda t: str(t.get("name", "")))
