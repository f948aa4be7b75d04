"""Rows kept as tuples read as the row dicts they stand for, and convert to the same Arrow table."""

from __future__ import annotations

import pytest

from rebalance_lab.replay import tables
from rebalance_lab.replay.moves import COLUMNS
from rebalance_lab.replay.rows import TupleRows

ROWS = [
    {"cluster_id": "c1", "group_id": "g", "generation": 2, "topic": "t", "partition": 0, "owner_before": "a",
     "owner_after": "b", "moved": True, "revoked_at": 1_000, "assigned_at": 3_000, "gap_ms": 2.0},
    {"cluster_id": "c1", "group_id": "g", "generation": 3, "topic": "t", "partition": 1, "owner_before": "b",
     "owner_after": None, "moved": False, "revoked_at": 5_000, "assigned_at": None, "gap_ms": None},
]


def tuple_rows() -> TupleRows:
    return TupleRows(COLUMNS, [tuple(row.values()) for row in ROWS])


def test_the_partition_moves_columns_are_the_schema_columns_in_order() -> None:
    assert list(COLUMNS) == tables.PARTITION_MOVES.names


def test_tuple_rows_read_compare_and_print_as_the_row_dicts() -> None:
    rows = tuple_rows()
    assert len(rows) == 2 and list(rows) == ROWS and rows[1] == ROWS[1] and rows[-1:] == ROWS[-1:]
    assert rows == ROWS and rows == tuple_rows() and rows != ROWS[:1]
    assert repr(rows) == repr(ROWS)
    assert not TupleRows(COLUMNS) and TupleRows(COLUMNS) == []


def test_tuple_rows_extend_with_tuple_rows_or_with_dicts_missing_keys_as_nulls() -> None:
    rows = TupleRows(COLUMNS)
    rows.extend(tuple_rows())
    rows.extend([{"topic": "u", "partition": 7}])
    assert list(rows)[:2] == ROWS
    assert rows[2] == {name: None for name in COLUMNS} | {"topic": "u", "partition": 7}
    with pytest.raises(ValueError, match="columns differ"):
        rows.extend(TupleRows(("topic",), [("t",)]))


def test_tuple_rows_convert_to_the_same_table_as_the_row_dicts() -> None:
    expected = tables.to_arrow("partition_moves", ROWS)
    converted = tables.to_arrow("partition_moves", tuple_rows())
    assert converted.schema == tables.PARTITION_MOVES and converted.equals(expected)
    empty = tables.to_arrow("partition_moves", TupleRows(COLUMNS))
    assert empty.num_rows == 0 and empty.schema == tables.PARTITION_MOVES


def test_tuple_rows_of_other_columns_are_refused_by_a_table() -> None:
    with pytest.raises(ValueError, match="columns"):
        tables.to_arrow("partition_moves", TupleRows(COLUMNS[:-1], [(None,) * 10]))
