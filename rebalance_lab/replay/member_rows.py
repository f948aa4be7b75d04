"""MEMBER rows as tuples: the Spark tasks' compact form of a snapshot's members (issue 20).

A ``GENERATION_SNAPSHOT`` lists every member with its subscription and assignment: a dict per member
and one per topic-partition, most of the objects a parse task ships through the shuffle. Arrow converts
each of them twice (the ``events`` table in the parse task, ``group_generations`` in the replay task),
reading every struct field by name, pickle writes and reads them once, and the fold converts every
assignment to tuples. As tuples in the struct's field order (:data:`FIELDS`), with each partition list
a tuple of :data:`~.generation.TP`, Arrow reads them by position, unpickling makes fewer and smaller
objects, and the fold takes a member's assignment as it is. Converting costs the parse task about what
its Arrow conversion and pickling save; the replay task gains (callgrind, compiled, 1e5 events: the replay of
100 groups 2,938 -> 2,718 M instructions, the parse of every fifth file 3,609 -> 3,561 M).

The parse task (:func:`rebalance_lab.replay.tasks.parse_files`) converts its events with a :class:`Compactor`
(the dump-log adapter's fast path makes its rows in this form itself, ``SourceContext.compact_members``: the bulk
of them, which the Compactor then passes on);
the fold reads either form (:func:`.timeline.member_of`); before Arrow, which takes one form per column, the
tasks turn the few dict rows left (those the fold writes itself, :func:`~.generation.member_row`, and those of
an event the fold would refuse) into tuples (:func:`tuple_members`). The single-process runner keeps the dicts:
its rows are read by the report, which reads members by name. Nothing changes a row in place, so equal lists
converted once are shared, as the parser shares them (pickle then stores each once per group).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from rebalance_lab.replay import column_types as ct
from rebalance_lab.replay.generation import TP, Event, Member

#: The MEMBER struct's fields: a tuple row holds their values in this order (:meth:`Compactor.row` and
#: :func:`member_tuple` spell it out).
FIELDS: tuple[str, ...] = tuple(name for name, _ in ct.MEMBER.fields)
if FIELDS != ("member_id", "group_instance_id", "client_id", "client_host", "rack_id", "session_timeout_ms",
              "rebalance_timeout_ms", "topics", "owned", "generation", "assignment"):
    raise ImportError(f"MEMBER's fields changed ({FIELDS}): update member_rows")

MemberTuple = tuple[Any, ...]
_Shared = tuple[object, ...]  # a TP, as one tuple object
#: A MEMBER row in either form: a dict keyed by :data:`FIELDS` (absent keys null) or a :data:`MemberTuple`.
MemberRow = dict[str, Any] | MemberTuple


class Compactor:
    """Converts member rows to tuples, each recorded list (and topic-partition) once: the parser shares one
    object among equal values, so converting by identity keeps that sharing. Each entry keeps its original
    alive, so an id is never reused while the compactor exists (one per input file: that is what the parser
    shares within).

    A row the fold reads by key and would refuse (a member without ``member_id``, a topic-partition without its
    topic or partition: :func:`.timeline.member_of`, :func:`~.generation.tps`) leaves its event as it is, so the
    fold refuses the group's replay there as it does in the single process (a tuple cannot tell an absent key
    from a null)."""

    __slots__ = ("_lists", "_topics", "_tps")

    def __init__(self) -> None:
        self._topics: dict[int, tuple[Sequence[str], tuple[str, ...]]] = {}
        self._lists: dict[int, tuple[Sequence[dict[str, Any]], tuple[TP, ...]]] = {}
        # A shared topic-partition is held as a plain tuple object: typed TP, mypyc would keep it unboxed and make
        # a new tuple at every return, which is what the sharing avoids.
        self._tps: dict[int, tuple[dict[str, Any], _Shared]] = {}

    def event(self, event: Event) -> Event:
        """``event`` with its ``members`` as tuples (the same event if it lists none or one the fold would refuse)."""
        rows = event.get("members")
        if not rows:
            return event
        for r in rows:
            if r.__class__ is dict:
                break
        else:  # tuples already (the dump-log adapter makes them: SourceContext.compact_members)
            return event
        try:
            members = [self.row(r) if r.__class__ is dict else r for r in rows]
        except KeyError:
            return event
        compact = dict(event)
        compact["members"] = members
        return compact

    def row(self, row: dict[str, Any]) -> MemberTuple:
        return (row["member_id"], row.get("group_instance_id"), row.get("client_id"), row.get("client_host"),
                row.get("rack_id"), row.get("session_timeout_ms"), row.get("rebalance_timeout_ms"),
                self.topics(row.get("topics")), self.partitions(row.get("owned")), row.get("generation"),
                self.partitions(row.get("assignment")))

    def topics(self, values: Sequence[str] | None) -> tuple[str, ...] | None:
        if values is None:
            return None
        found = self._topics.get(id(values))
        if found is None:
            found = self._topics[id(values)] = (values, tuple(values))
        return found[1]

    def partitions(self, values: Sequence[dict[str, Any]] | None) -> tuple[TP, ...] | None:
        if values is None:
            return None
        found = self._lists.get(id(values))
        if found is None:
            found = self._lists[id(values)] = (values, cast(tuple[TP, ...], tuple([self.tp(v) for v in values])))
        return found[1]

    def tp(self, value: dict[str, Any]) -> _Shared:
        found = self._tps.get(id(value))
        if found is not None:
            return found[1]
        tp: _Shared = (value["topic"], value["partition"])  # boxed once, here (see _tps)
        self._tps[id(value)] = (value, tp)
        return tp


def member_tuple(row: MemberTuple) -> Member:
    """The :class:`~.generation.Member` of a tuple row (:func:`.timeline.member_of` reads both forms)."""
    member_id, instance, client_id, host, rack, session, _rebalance, topics, owned, generation, assignment = row
    return Member(member_id, instance, client_id, host, rack, session, topics, None, generation, assignment,
                  instance if instance is not None else member_id, owned)


def tuple_members(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (events, or ``group_generations`` rows) with every row of their ``members`` a tuple: Arrow's converter
    takes the form of a struct column's first value for all of them. Dict rows (the fold's own, or those of an event
    the :class:`Compactor` left) become the tuples Arrow reads them as, an absent key a null; rows whose members are
    tuples already are kept as they are."""
    out: list[dict[str, Any]] = []
    for row in rows:
        members = row.get("members")
        if members and any(m.__class__ is dict for m in members):
            row = {**row, "members": [_as_read(m) if m.__class__ is dict else m for m in members]}
        out.append(row)
    return out


def _as_read(row: dict[str, Any]) -> MemberTuple:
    """A dict row as Arrow reads it (an absent key is a null)."""
    return (row.get("member_id"), row.get("group_instance_id"), row.get("client_id"), row.get("client_host"),
            row.get("rack_id"), row.get("session_timeout_ms"), row.get("rebalance_timeout_ms"), row.get("topics"),
            _tps_as_read(row.get("owned")), row.get("generation"), _tps_as_read(row.get("assignment")))


def _tps_as_read(values: Sequence[dict[str, Any]] | None) -> list[tuple[Any, Any]] | None:
    return None if values is None else [(v.get("topic"), v.get("partition")) for v in values]
