"""The canonical rebalance event (``rbl-event/1``, spec/replay-inputs.md §7.1) in memory, JSONL and Arrow.

Every source adapter yields these and the replay reads nothing else. In memory an
event is a plain ``dict`` keyed by column name; absent keys mean null. The one
conversion is ``ts``: **an int of microseconds since the epoch, UTC** in memory
and in Arrow/Parquet (``timestamp[us, UTC]``), an ISO-8601 string in JSON Lines
(what the emulator's ``--record`` writes, docs/event-schema.md). Keeping the
time as an int keeps the per-group code fast and free of time-zone objects.

Parquet and JSONL carry the same columns, in the order of :data:`COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from rebalance_lab.replay import column_types as ct
from rebalance_lab.replay.event_rows import (  # re-exported: the replay's modules know these names from here
    COLUMN_NAMES,
    EVENT_TYPES,
    SCHEMA_MAJOR,
    SCHEMA_VERSION,
    SOURCES,
    EventError,
    check,
    from_json,
    iter_jsonl,
    parse_tp,
    to_json,
    tp,
    tp_key,
    ts_from_iso,
    ts_from_ms,
    ts_to_iso,
    write_jsonl,
)

__all__ = ["ARROW_SCHEMA", "COLUMNS", "COLUMN_NAMES", "EVENT_TYPES", "MEMBER", "SCHEMA_MAJOR", "SCHEMA_VERSION",
           "SOURCES", "SUBSCRIPTION", "TP", "TP_LIST", "TS", "EventError", "arrow_schema", "arrow_type", "check",
           "from_arrow", "from_json", "iter_jsonl", "parse_tp", "python_columns", "table_from_rows", "to_arrow",
           "to_json", "tp", "tp_key", "ts_from_iso", "ts_from_ms", "ts_to_iso", "write_jsonl"]


def arrow_type(ctype: ct.ColumnType) -> pa.DataType:
    """The Arrow type of a :mod:`~rebalance_lab.replay.column_types` column type (all fields nullable)."""
    if isinstance(ctype, ct.Prim):
        return _ARROW_PRIMS[ctype.kind]
    if isinstance(ctype, ct.Struct):
        return pa.struct([(name, arrow_type(t)) for name, t in ctype.fields])
    if isinstance(ctype, ct.ListOf):
        return pa.list_(arrow_type(ctype.item))
    return pa.map_(arrow_type(ctype.key), arrow_type(ctype.value))


def arrow_schema(columns: ct.Columns) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(ctype)) for name, ctype in columns])


_ARROW_PRIMS: dict[str, pa.DataType] = {
    "string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
    "timestamp_us_utc": pa.timestamp("us", tz="UTC"),
}
TP = arrow_type(ct.TP)
TP_LIST = arrow_type(ct.TP_LIST)
SUBSCRIPTION = arrow_type(ct.SUBSCRIPTION)
MEMBER = arrow_type(ct.MEMBER)
TS = arrow_type(ct.TS)

#: Every column, in storage order, with its Arrow type (defined in :mod:`.column_types`).
COLUMNS: tuple[tuple[str, pa.DataType], ...] = tuple((name, arrow_type(ctype)) for name, ctype in ct.EVENT_COLUMNS)
ARROW_SCHEMA = pa.schema([pa.field(name, dtype) for name, dtype in COLUMNS])


# --- Arrow / Parquet ------------------------------------------------------------------------------------------------

def to_arrow(events: Iterable[dict[str, Any]]) -> pa.Table:
    """Events to a table with exactly :data:`ARROW_SCHEMA` (missing keys become nulls)."""
    return table_from_rows(events, ARROW_SCHEMA)


def table_from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Row dicts to a table of ``schema``: absent keys are nulls, keys outside it are ignored, and a map
    column may be given as a dict. Arrow's converter reads the dicts itself, as one struct array
    (cheaper than ``Table.from_pylist``, which gathers every column in Python first)."""
    values = rows if isinstance(rows, list) else list(rows)
    return pa.Table.from_struct_array(pa.array(values, pa.struct(list(schema))))


def python_columns(table: pa.Table) -> dict[str, list[Any]]:
    """Each column of ``table`` as a Python list: timestamps as int epoch microseconds, maps as dicts."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        values = column.to_pylist()
        if pa.types.is_map(column.type):
            values = [dict(v) if v is not None else None for v in values]
        columns[name] = values
    return columns


def from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """A table with the canonical columns back to in-memory events (``ts`` as int µs, nulls dropped)."""
    columns = python_columns(table)
    names = list(columns)
    return [
        {name: value for name, value in zip(names, values, strict=True) if value is not None}
        for values in zip(*(columns[name] for name in names), strict=True)
    ]
