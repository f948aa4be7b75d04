"""The single-process runner: parse, group, replay each group, write Parquet with the exact schemas."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables
from rebalance_lab.replay.local import run_local
from rebalance_lab.replay.model import replay_group
from rebalance_lab.replay.whatif import WhatIfError

from .model_helpers import Group, parts, topic_metadata


def recording(path: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [topic_metadata(-1, {"t": 4})]
    for name in ("orders", "payments"):
        g = Group(group=name)
        g.joined(0, "a-1")
        g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3)})
        g.joined(1000, "b-1")
        g.generation(1000, 2, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)})
        rows.extend(g.events)
    with path.open("w") as out:
        ev.write_jsonl(rows, out)  # type: ignore[arg-type]
    return rows


def test_every_group_is_replayed_and_every_table_written_with_its_schema(tmp_path: Path) -> None:
    source = tmp_path / "rec.jsonl"
    rows = recording(source)
    result = run_local([source], whatif=["sticky"], out_dir=tmp_path / "out")
    assert (result.events, result.groups, result.errors) == (len(rows), 2, [])
    assert [r["group_id"] for r in result.tables["group_summary"]] == ["orders", "payments"]
    assert len(result.tables["whatif_results"]) == 4 and all(r["reproduced"] for r in result.tables["whatif_results"])
    for name, schema in tables.TABLES.items():
        written = pq.read_table(tmp_path / "out" / name / "part-0.parquet")
        assert written.schema.equals(schema), name
        assert written.num_rows == len(result.tables[name])
    assert pq.read_table(tmp_path / "out" / "events" / "part-0.parquet").schema.equals(ev.ARROW_SCHEMA)
    assert set(result.seconds) == {"parse", "replay", "write"} and result.report.events == len(rows)


def test_the_runner_gives_each_group_what_the_model_gives_it(tmp_path: Path) -> None:
    source = tmp_path / "rec.jsonl"
    rows = recording(source)
    result = run_local([tmp_path], fmt="emulator", whatif=["range"])
    orders = [e for e in ev.iter_jsonl(source.read_text().splitlines()) if e.get("group_id") == "orders"]
    direct = replay_group(orders, [e for e in rows if e["event_type"] == "TOPIC_METADATA"], whatif=["range"])
    assert direct["rebalance_episodes"] == [r for r in result.tables["rebalance_episodes"] if r["group_id"] == "orders"]


def test_a_group_that_fails_is_reported_and_the_others_are_replayed(tmp_path: Path) -> None:
    source = tmp_path / "rec.jsonl"
    recording(source)
    broken = Group(group="broken")
    broken.snapshot(0, 1, {"a-1": []})
    del broken.events[0]["members"][0]["member_id"]
    with source.open("a") as out:
        ev.write_jsonl(broken.events, out)
    result = run_local([source])
    assert [e["group_id"] for e in result.errors] == ["broken"] and "KeyError" in result.errors[0]["error"]
    assert result.groups == 3 and len(result.tables["group_summary"]) == 2


def test_an_unknown_what_if_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(WhatIfError):
        run_local([tmp_path / "missing.jsonl"], whatif=["uniform"])


def test_the_local_runner_gathers_partition_moves_as_tuples_as_the_spark_task_does(tmp_path: Path) -> None:
    # Each group's ~300 moves made into row dicts cost more CPU than their Arrow conversion (issue 20 performance).
    source = tmp_path / "rec.jsonl"
    recording(source)
    moves = run_local([source]).tables["partition_moves"]
    assert isinstance(moves, tables.TupleRows) and len(moves.tuples) == len(moves) > 0
    orders = [dict(r) for r in moves if r["group_id"] == "orders"]
    assert orders and {r["partition"] for r in orders} <= {0, 1, 2, 3}
