"""The Spark tasks' compact member rows (issue 20): tuples in the MEMBER struct's order that convert to the same
Arrow, and replay to the same tables, as the parsers' dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables, tasks
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.local import parse_inputs, split_groups
from rebalance_lab.replay.member_rows import FIELDS, Compactor, tuple_members
from rebalance_lab.replay.model import replay_group

SAMPLES = Path(__file__).parent / "samples"
#: Snapshots with static replacements (real brokers), a 3.8 dump, and a leader's client log (members without
#: snapshots): every place a member row comes from.
SETS = {
    "kafka-4.4.0": ["evidence-kafka-4.4.0/server.log", "evidence-kafka-4.4.0/offsets.dump.txt"],
    "kafka-3.9.2": ["evidence-kafka-3.9.2/server.log", "evidence-kafka-3.9.2/offsets.dump.txt"],
    "dump-3.8": ["dump-log-3.8.txt"],
    "client": ["client-static-coop.log"],
}
WHATIF = ("cooperative-sticky", "range", "static", "sticky+static")


def _parsed(files: list[str]) -> list[dict[str, Any]]:
    options = {"tz": "UTC", "cluster_id": "default", "broker_id": None, "options": {}}
    return parse_inputs([SAMPLES / f for f in files], "auto", options, ParseReport())


def _compacted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    compactor = Compactor()
    return [compactor.event(e) for e in events]


@pytest.mark.parametrize("name", sorted(SETS))
def test_compacted_events_convert_to_the_same_arrow_and_hold_their_members_as_tuples(name: str) -> None:
    events = _parsed(SETS[name])
    compact = _compacted(events)
    rows = [m for e in compact for m in e.get("members") or ()]
    assert rows and all(type(m) is tuple and len(m) == len(FIELDS) for m in rows)
    assert ev.to_arrow(compact).equals(ev.to_arrow(events))


def test_equal_partition_lists_stay_one_object_once_compacted() -> None:
    """The parser shares a list among the rows that record it; the compact rows share its tuple (pickle then
    writes it once per group, and the fold's "kept its list" comparisons meet the same object)."""
    shared = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    event = {"event_type": "GENERATION_SNAPSHOT", "members": [
        {"member_id": "a", "owned": shared, "assignment": shared},
        {"member_id": "b", "assignment": [shared[0]]}]}
    a, b = Compactor().event(event)["members"]
    assert a[FIELDS.index("owned")] is a[FIELDS.index("assignment")] == (("t", 0), ("t", 1))
    assert b[FIELDS.index("assignment")][0] is a[FIELDS.index("assignment")][0]
    assert b[FIELDS.index("owned")] is None and b[FIELDS.index("client_id")] is None
    assert event["members"][0] == {"member_id": "a", "owned": shared, "assignment": shared}  # not changed


def _arrow(result: dict[str, Any]) -> dict[str, pa.Table]:
    return {name: tasks._to_arrow(name, rows) for name, rows in result.items()}


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_group_replays_to_the_same_tables_from_compact_member_rows(name: str) -> None:
    groups, topics = split_groups(_parsed(SETS[name]))
    assert groups
    for (cluster, _), events in sorted(groups.items()):
        expected = replay_group(events, topics.get(cluster, []), whatif=WHATIF)
        got = replay_group(_compacted(events), topics.get(cluster, []), whatif=WHATIF)
        for table, arrow in _arrow(got).items():
            assert arrow.equals(tables.to_arrow(table, expected[table])), table


def test_generation_rows_mixing_both_forms_convert_as_one() -> None:
    """A snapshot's rows arrive as tuples, the members the fold rebuilt from events as dicts: Arrow takes one
    form per column, so the replay task makes them all tuples first."""
    snapshot = Compactor().row({"member_id": "a", "assignment": [{"topic": "t", "partition": 0}]})
    rows = [{"generation": 1, "members": [snapshot]}, {"generation": 2, "members": [{"member_id": "b"}]},
            {"generation": 3, "members": None}]
    uniform = tuple_members(rows)
    assert uniform[0] is rows[0] and uniform[2] is rows[2] and rows[1]["members"] == [{"member_id": "b"}]
    table = tables.to_arrow("group_generations", uniform)
    assert table.column("members").to_pylist()[:2] == [
        [dict(zip(FIELDS, (*snapshot[:10], [{"topic": "t", "partition": 0}]), strict=True))],
        [{name: "b" if name == "member_id" else None for name in FIELDS}]]


def test_an_event_whose_members_the_fold_would_refuse_stays_as_parsed_and_fails_its_group_alike() -> None:
    """A tuple cannot tell an absent key from a null: a topic-partition without its partition (a damaged recording
    line passes the value check) keeps its event's dicts, so the group fails in Spark as in the single process,
    and the events table still converts as one column with the compacted events beside it."""
    events = _parsed(SETS["kafka-4.4.0"])
    at = next(i for i, e in enumerate(events) if e.get("members") and e["members"][0].get("assignment"))
    member = events[at]["members"][0]
    damaged = {**events[at], "members": [{**member, "assignment": [{"topic": "t"}]}, *events[at]["members"][1:]]}
    events[at] = damaged
    compact = _compacted(events)
    assert compact[at] is damaged
    assert any(type(e["members"][0]) is tuple for e in compact if e.get("members"))  # the others compacted
    assert ev.to_arrow(tuple_members(compact)).equals(ev.to_arrow(events))
    groups, topics = split_groups(events)
    key = (damaged.get("cluster_id") or "", damaged["group_id"])
    with pytest.raises(KeyError) as expected:
        replay_group(groups[key], topics.get(key[0], []), whatif=WHATIF)
    with pytest.raises(KeyError) as got:
        replay_group(_compacted(groups[key]), topics.get(key[0], []), whatif=WHATIF)
    assert got.value.args == expected.value.args == ("partition",)
