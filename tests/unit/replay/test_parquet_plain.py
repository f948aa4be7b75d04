"""The plain-Python Parquet writer writes what pyarrow writes: read back by pyarrow (the oracle), the same
Arrow schema and the same values, for every table, the events and nested values' corner cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rebalance_lab.replay import column_types as ct
from rebalance_lab.replay import events as ev
from rebalance_lab.replay import parts, tables
from rebalance_lab.replay.local import run_local, write_tables
from rebalance_lab.replay.parquet_plain import PLAIN_MAX_ROWS, write_table
from rebalance_lab.replay.rows import TupleRows

DEMO = Path(__file__).parent / "samples" / "demo-recording.jsonl"

NESTED: ct.Columns = (
    ("name", ct.STRING), ("n", ct.INT32), ("big", ct.INT64), ("x", ct.FLOAT64), ("flag", ct.BOOL), ("ts", ct.TS),
    ("tags", ct.STRINGS), ("members", ct.ListOf(ct.MEMBER)), ("counts", ct.MapOf(ct.STRING, ct.INT32)),
    ("sub", ct.SUBSCRIPTION), ("lists", ct.ListOf(ct.ListOf(ct.INT32))),
)
MEMBER = {"member_id": "m-1", "topics": ["t", None], "owned": [], "generation": 3,
          "assignment": [{"topic": "t", "partition": 0}, None, {"topic": None, "partition": 2}]}
NESTED_ROWS: list[dict[str, Any]] = [
    {"name": "all set", "n": -7, "big": 2**40, "x": 1.5, "flag": True, "ts": 1_700_000_000_123_456,
     "tags": ["a", "", "ü"], "members": [MEMBER, None, {}], "counts": {"a": 1, "b": None},
     "sub": {"topics": ["t"], "owned": [{"topic": "t", "partition": 1}], "generation": None, "rack": "r"},
     "lists": [[1, 2], [], None, [None, 3]]},
    {},  # every column null
    {"name": None, "flag": False, "tags": [], "members": [], "counts": {}, "sub": {}, "lists": []},
    {"tags": [None], "members": [{"owned": [None]}], "counts": [("z", 0)], "lists": [[None]]},
]


def read_back(path: Path) -> list[dict[str, Any]]:
    return tables.from_arrow(pq.read_table(path))


def test_nested_nulls_empties_and_every_primitive_read_back_as_written(tmp_path: Path) -> None:
    assert write_table(tmp_path / "t.parquet", NESTED, NESTED_ROWS) == len(NESTED_ROWS)
    schema = ev.arrow_schema(NESTED)
    written = pq.read_table(tmp_path / "t.parquet")
    assert written.schema.equals(schema)
    assert written.equals(ev.table_from_rows(NESTED_ROWS, schema))


def test_an_empty_table_has_the_schema_and_no_rows(tmp_path: Path) -> None:
    assert write_table(tmp_path / "t.parquet", ct.GROUP_SUMMARY, []) == 0
    written = pq.read_table(tmp_path / "t.parquet")
    assert written.num_rows == 0 and written.schema.equals(tables.GROUP_SUMMARY)


def test_every_table_of_the_demo_replay_and_its_events_equal_pyarrows_own_files(tmp_path: Path) -> None:
    result = run_local([DEMO], whatif=["sticky", "cooperative-sticky"])
    events = [ev.from_json(line) for line in DEMO.read_text().splitlines()]
    moves = TupleRows([name for name, _ in ct.PARTITION_MOVES])
    moves.extend(result.tables["partition_moves"])  # as the model gives them: tuples
    assert moves
    write_tables(tmp_path, {**result.tables, "partition_moves": moves}, events)  # small: the plain writer
    for name, columns in (*ct.TABLE_COLUMNS.items(), ("events", ct.EVENT_COLUMNS)):
        rows = events if name == "events" else result.tables[name]
        expected = ev.to_arrow(rows) if name == "events" else tables.to_arrow(name, rows)
        written = pq.read_table(tmp_path / name / "part-0.parquet")
        assert written.schema.equals(expected.schema), name
        assert written.equals(expected), name
        assert len(columns) == written.num_columns


def test_large_outputs_are_written_by_pyarrow_with_the_same_tables(tmp_path: Path) -> None:
    events = [ev.from_json(line) for line in DEMO.read_text().splitlines()]
    many = events * (PLAIN_MAX_ROWS // len(events) + 1)
    write_tables(tmp_path, {}, many)
    written = pq.read_table(tmp_path / "events" / "part-0.parquet")
    assert written.num_rows == len(many) and written.schema.equals(ev.ARROW_SCHEMA)
    assert b"rebalance-lab parquet_plain" not in (tmp_path / "events" / "part-0.parquet").read_bytes()[-200:]


def test_a_value_of_the_wrong_type_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="column n: a value is not of type int32"):
        write_table(tmp_path / "t.parquet", (("n", ct.INT32),), [{"n": "seven"}])


def test_large_outputs_are_converted_and_written_a_batch_at_a_time_to_the_same_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parts, "ROWS_PER_WRITE", 7_000)
    result = run_local([DEMO], whatif=["cooperative-sticky"])
    events = [ev.from_json(line) for line in DEMO.read_text().splitlines()]
    many = events * (PLAIN_MAX_ROWS // len(events) + 1)
    moves = TupleRows([name for name, _ in ct.PARTITION_MOVES])
    for _ in range(PLAIN_MAX_ROWS // len(result.tables["partition_moves"]) + 1):
        moves.extend(result.tables["partition_moves"])
    write_tables(tmp_path, {**result.tables, "partition_moves": moves}, many)
    for name, rows in (("events", many), ("partition_moves", moves), ("group_summary", result.tables["group_summary"])):
        path = tmp_path / name / "part-0.parquet"
        expected = ev.to_arrow(rows) if name == "events" else tables.to_arrow(name, rows)
        assert pq.read_table(path).equals(expected), name
        metadata = pq.ParquetFile(path).metadata
        sizes = [metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)]
        assert sizes == [min(7_000, len(rows) - start) for start in range(0, len(rows), 7_000)], name
    assert pq.read_table(tmp_path / "rebalance_episodes" / "part-0.parquet").schema.equals(tables.REBALANCE_EPISODES)
