"""The derived tables of a replay (spec/replay-inputs.md §7.2) as Arrow schemas (columns: :mod:`.column_types`).

The per-group replay (:mod:`rebalance_lab.replay.model`) returns rows as dicts
keyed by these column names (``partition_moves`` as a :class:`~.rows.TupleRows`, which reads
as such dicts); times are epoch microseconds (``ts`` columns) and
durations are float milliseconds (``*_ms``). Both the Spark pipeline and the
single-process runner write each table as Parquet with exactly these schemas,
so their outputs compare row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rebalance_lab.replay import column_types as ct
from rebalance_lab.replay.events import arrow_schema, arrow_type, python_columns, table_from_rows
from rebalance_lab.replay.rows import TupleRows as TupleRows  # re-exported: the tasks gather rows by kind

MEMBER_ASSIGNMENT = arrow_type(ct.MEMBER_ASSIGNMENT)
GROUP_GENERATIONS = arrow_schema(ct.GROUP_GENERATIONS)
REBALANCE_EPISODES = arrow_schema(ct.REBALANCE_EPISODES)
PARTITION_MOVES = arrow_schema(ct.PARTITION_MOVES)
WHATIF_RESULTS = arrow_schema(ct.WHATIF_RESULTS)
GROUP_SUMMARY = arrow_schema(ct.GROUP_SUMMARY)

#: The columns are defined once, without Arrow, in :mod:`.column_types`.
TABLES: dict[str, pa.Schema] = {name: arrow_schema(columns) for name, columns in ct.TABLE_COLUMNS.items()}


def to_arrow(name: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows of table ``name`` to Arrow with its exact schema (map columns may be given as dicts)."""
    schema = TABLES[name]
    if isinstance(rows, TupleRows):
        if rows.columns != tuple(schema.names):
            raise ValueError(f"{name}: columns {rows.columns} are not {schema.names}")
        return pa.Table.from_struct_array(pa.array(rows.tuples, pa.struct(list(schema))))
    return table_from_rows(rows, schema)


def from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """A table back to row dicts (timestamps as epoch microseconds, maps as dicts)."""
    columns = python_columns(table)
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*(columns[n] for n in names), strict=True)]
