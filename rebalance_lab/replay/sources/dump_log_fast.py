"""The dump-log adapter's fast path: GroupMetadata records in the shape dump-log prints, decoded straight
into typed structs (:class:`GroupMetadataReader`); anything else goes to the general path (:mod:`.dump_log`).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import msgspec

from rebalance_lab.replay.sources.dump_log_values import (
    INT32_MAX,
    INT32_MIN,
    Bad,
    assignment_tps,
    subscription_columns,
)

# --- GroupMetadata records in the shape dump-log prints, typed (the fast path) ------------------------------------

class _Typed(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """The shape of a 3.8+ GroupMetadata record's key and value as dump-log prints them. Unknown fields are
    refused rather than skipped: every value then sits in a field of a given type, so what decodes here is a
    subset of what ``json`` reads, to the same values (a skipped field could hold what ``json`` refuses, such as
    a number too long to convert). A default stands for an absent field (older record versions print fewer) and
    is what the general path makes of its absence. The structs are never part of a cycle: no GC tracking."""


class _TopicPartitions(_Typed):
    topic: str
    partitions: list[Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]]  # else the general path reports it


class _Subscription(_Typed):
    topics: tuple[str, ...] = ()  # a tuple: the key of the topic-list cache
    user_data: str | None = None
    # Partition lists are left undecoded (but checked to be JSON), each distinct text read once per input
    # (GroupMetadataReader.tp_lists): a subscription's text also differs by its generation, and a member's
    # owned partitions can repeat an assignment text.
    owned_partitions: msgspec.Raw = msgspec.Raw(b"[]")
    generation_id: Annotated[int, msgspec.Meta(ge=INT32_MIN, le=INT32_MAX)] = -1  # int32, as the general path
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
    # decoded once per input (see GroupMetadataReader). An absent one reads as null, as in the general path.
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
_SUBSCRIPTION = msgspec.json.Decoder(_Subscription | str | None)  # a string: base64 (see subscription_columns)
_ASSIGNMENT = msgspec.json.Decoder(_Assignment | str | None)
_PARTITIONS = msgspec.json.Decoder(tuple[_TopicPartitions, ...])
_KEY_END = "} payload: {"
_UNSEEN: Any = object()  # not in a cache (where None is a value)

#: A subscription as its member columns (topics, owned, generation, rack_id), or what subscription_columns reads.
#: Lists as the reader makes them: lists of tp dicts, or (compact) tuples of ``(topic, partition)`` tuples.
Subscription = tuple[Any, Any, int, str | None] | str | None
#: An assignment's tps (a list of dicts, or a tuple of tuples when compact), or what assignment_tps reads.
Assignment = list[dict[str, Any]] | tuple[Any, ...] | str | None
#: A member row still without its subscription and assignment columns, and what they are read from.
_Later = tuple[dict[str, Any], Subscription, Assignment]


class GroupMetadataReader:
    """The fast path for the records that dominate a dump: GroupMetadata in the shape dump-log prints, decoded
    straight into typed structs (no intermediate dicts) with each distinct subscription and assignment text
    read once per input. What it does not take (None: a tombstone, another field or type, broken JSON) the
    general path reads, and reports as it must; nothing is reported before a record is taken.

    One tp dict per topic-partition, one list per distinct subscription topics and per distinct owned or
    assigned text are shared by every member row that has them: a group's snapshots repeat them (a member
    keeps its assignment across generations), and pickle then stores each once per group. Nothing changes
    them in place: rebalance_lab/replay only reads them, turns them into tuples or copies them.

    ``compact`` (the Spark tasks: ``SourceContext.compact_members``) makes every member row a tuple in the MEMBER
    struct's field order, its topics and partition lists tuples and each topic-partition a ``(topic, partition)``
    tuple, shared the same way: the form :mod:`rebalance_lab.replay.member_rows` ships, made here where the values
    are decoded instead of as dicts that the task's Compactor converts again, member by member (~1.2 us each,
    ~1.4 CPU-s per 10**6 events).
    """

    def __init__(self, compact: bool = False) -> None:
        self.compact = compact
        self.tps: dict[str, dict[int, Any]] = {}  # topic -> partition -> tp (a dict, or a tuple when compact)
        self.topic_lists: dict[tuple[str, ...], Any] = {}
        self.subscriptions: dict[bytes, Subscription] = {}  # JSON text -> its columns
        self.assignments: dict[bytes, Assignment] = {}
        self.tp_lists: dict[bytes, Any] = {}  # owned or assigned partitions' JSON text -> tps

    def read(self, key_text: str) -> tuple[str, _GroupMetadata, list[Any], list[_Later]] | None:
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

    def rows(self, members: list[_Member], consumer: bool) -> tuple[list[Any], list[_Later]]:
        """What :func:`_member` makes of each member, each subscription and assignment text decoded on its first
        occurrence. A consumer member whose subscription or assignment is not decoded JSON (base64, null) gets a
        row without them, listed for :meth:`finish`: what reads them may report, and nothing is reported before
        the whole record is taken (a later member can still send it to the general path).

        One loop builds each row in one dict display (a tuple when compact), its strings interned: this runs once
        per member of every snapshot, the bulk of a dump.
        """
        subscriptions, assignments, intern = self.subscriptions, self.assignments, sys.intern
        compact = self.compact
        decoded = tuple if compact else list  # what a decoded partition list is
        rows: list[Any] = []
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
            if consumer and sub.__class__ is tuple and assigned.__class__ is decoded:
                topics, owned, generation, rack = sub
                if compact:
                    rows.append((intern(m.member_id), instance, client, host, rack, m.session_timeout,
                                 m.rebalance_timeout, topics, owned, generation, assigned))
                    continue
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

    def finish(self, rows: list[Any], later: list[_Later], bad: Bad) -> list[Any]:
        """``rows`` with the subscription and assignment columns of the rows :meth:`rows` left, read in member order,
        reporting what cannot be read (when compact, those rows then become tuples too)."""
        decoded = tuple if self.compact else list
        for row, sub, assigned in later:
            if sub.__class__ is tuple:
                row["topics"], row["owned"], row["generation"], row["rack_id"] = sub
            else:
                subscription_columns(sub, row, bad)
            row["assignment"] = assigned if assigned.__class__ is decoded else assignment_tps(assigned, bad)
        return [_compact_row(r) if r.__class__ is dict else r for r in rows] if self.compact and later else rows

    def subscription(self, text: bytes) -> Subscription:
        value: _Subscription | str | None = _SUBSCRIPTION.decode(text)
        if not isinstance(value, _Subscription):
            return value
        return (self.topic_list(value.topics), self.partitions(value.owned_partitions), value.generation_id,
                value.rack_id)

    def assignment(self, text: bytes) -> Assignment:
        value: _Assignment | str | None = _ASSIGNMENT.decode(text)
        return self.partitions(value.assigned_partitions) if isinstance(value, _Assignment) else value

    def topic_list(self, topics: tuple[str, ...]) -> Any:
        found = self.topic_lists.get(topics)
        if found is None:
            interned = [sys.intern(t) for t in topics]
            found = self.topic_lists[topics] = tuple(interned) if self.compact else interned
        return found

    def partitions(self, raw: msgspec.Raw) -> Any:
        """The tps of a ``[{"topic": t, "partitions": [0, 1]}]`` text, decoded on its first occurrence."""
        text = bytes(raw)
        found = self.tp_lists.get(text)
        if found is None:
            found = self.tp_lists[text] = self.tp_list(_PARTITIONS.decode(text))
        return found

    def tp_list(self, groups: tuple[_TopicPartitions, ...]) -> Any:
        found: list[Any] = []
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
                if self.compact:
                    found += [row.get(p) or row.setdefault(p, (topic, p)) for p in group.partitions]
                else:
                    found += [row.get(p) or row.setdefault(p, {"topic": topic, "partition": p})
                              for p in group.partitions]
        return tuple(found) if self.compact else found


def _compact_row(row: dict[str, Any]) -> tuple[Any, ...]:
    """A dict member row that :meth:`GroupMetadataReader.finish` completed, in the compact form (its lists may hold tp
    dicts from the general path or the reader's tuples)."""
    topics = row["topics"]
    return (row["member_id"], row["group_instance_id"], row["client_id"], row["client_host"], row["rack_id"],
            row["session_timeout_ms"], row["rebalance_timeout_ms"], None if topics is None else tuple(topics),
            _compact_tps(row["owned"]), row["generation"], _compact_tps(row["assignment"]))


def _compact_tps(values: Any) -> tuple[Any, ...] | None:
    if values is None:
        return None
    return tuple([v if v.__class__ is tuple else (v["topic"], v["partition"]) for v in values])


