"""A small Parquet writer in plain Python, for the single-process engine's small outputs (issue 20 item 3).

A demo-sized replay runs in well under a second, but importing pyarrow to write its tables costs
0.8-2.5 s more (pyarrow loads numpy and pandas). :func:`write_table` writes rows of the
:mod:`~rebalance_lab.replay.column_types` columns as one Parquet file that pyarrow and Spark read
back with exactly the Arrow schema of :mod:`~rebalance_lab.replay.tables` (tests/unit/replay/
test_parquet_plain.py checks both against pyarrow's own file). It is deliberately the simplest
valid file of the Apache Parquet format: one row group, one uncompressed v1 data page per column,
PLAIN values and RLE levels, no statistics; it shreds nested values as the format's
"Dremel" record shredding prescribes (definition and repetition levels). For large outputs the
local engine still writes with pyarrow, whose converter is written in C (:data:`PLAIN_MAX_ROWS`).

List items are named ``item`` (Arrow's default field name) rather than the format's suggested
``element``: pyarrow names the Arrow field after that node, so the schema reads back unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rebalance_lab.protocol.wire_primitives import uvarint
from rebalance_lab.replay.column_types import Columns, ColumnType, ListOf, Prim, Struct
from rebalance_lab.replay.thrift_compact import Field, encode_struct

#: The local engine writes tables of up to this many rows (all tables and events together) with this writer.
PLAIN_MAX_ROWS = 20_000

_MAGIC = b"PAR1"
# parquet.thrift enums
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_REQUIRED, _OPTIONAL, _REPEATED = 0, 1, 2
_UTF8, _MAP, _LIST, _TIMESTAMP_MICROS = 0, 1, 3, 10
_PLAIN, _RLE = 0, 3
_PHYSICAL = {"string": _BYTE_ARRAY, "int32": _INT32, "int64": _INT64, "float64": _DOUBLE, "bool": _BOOLEAN,
             "timestamp_us_utc": _INT64}


class _Leaf:
    """One leaf column: its levels and its non-null values, as the shredder produces them."""

    __slots__ = ("defs", "kind", "max_def", "max_rep", "path", "reps", "values")

    def __init__(self, path: tuple[str, ...], kind: str, max_def: int, max_rep: int) -> None:
        self.path, self.kind, self.max_def, self.max_rep = path, kind, max_def, max_rep
        self.reps: list[int] = []
        self.defs: list[int] = []
        self.values: list[Any] = []


class _Node:
    """A column type with the leaves below it (in schema order) and its children's nodes."""

    __slots__ = ("children", "leaves", "names", "type")

    def __init__(self, ctype: ColumnType, path: tuple[str, ...], max_def: int, max_rep: int,
                 required: bool = False) -> None:
        self.type = ctype
        self.names: tuple[str, ...] = ()
        self.children: list[_Node] = []
        level = max_def if required else max_def + 1
        if isinstance(ctype, Prim):
            self.leaves = [_Leaf(path, ctype.kind, level, max_rep)]
            return
        if isinstance(ctype, Struct):
            self.names = tuple(name for name, _ in ctype.fields)
            self.children = [_Node(t, (*path, name), level, max_rep) for name, t in ctype.fields]
        elif isinstance(ctype, ListOf):
            self.children = [_Node(ctype.item, (*path, "list", "item"), level + 1, max_rep + 1)]
        else:
            self.children = [_Node(ctype.key, (*path, "key_value", "key"), level + 1, max_rep + 1, required=True),
                             _Node(ctype.value, (*path, "key_value", "value"), level + 1, max_rep + 1)]
        self.leaves = [leaf for child in self.children for leaf in child.leaves]


def _nulls(node: _Node, rep: int, level: int) -> None:
    for leaf in node.leaves:
        leaf.reps.append(rep)
        leaf.defs.append(level)


def _shred(node: _Node, value: Any, rep: int, level: int, depth: int) -> None:
    """Append ``value`` (of ``node``'s optional type) to its leaves: ``level`` counts the defined
    ancestors, ``depth`` the repeated ones, ``rep`` the level at which this value repeats."""
    if value is None:
        _nulls(node, rep, level)
        return
    level += 1
    ctype = node.type
    if isinstance(ctype, Prim):
        leaf = node.leaves[0]
        leaf.reps.append(rep)
        leaf.defs.append(level)
        leaf.values.append(value)
    elif isinstance(ctype, Struct):
        values = (value.get(name) for name in node.names) if isinstance(value, dict) else value
        for child, item in zip(node.children, values, strict=True):
            _shred(child, item, rep, level, depth)
    elif isinstance(ctype, ListOf):
        _shred_repeated(node, [(item,) for item in value], rep, level, depth)
    else:
        _shred_repeated(node, list(value.items() if isinstance(value, dict) else value), rep, level, depth)


def _shred_repeated(node: _Node, entries: Sequence[tuple[Any, ...]], rep: int, level: int, depth: int) -> None:
    """A list's items (1-tuples) or a map's (key, value) pairs; a map key is required, not optional."""
    if not entries:
        _nulls(node, rep, level)
        return
    inner = depth + 1
    for index, entry in enumerate(entries):
        at = rep if index == 0 else inner
        if len(entry) == 2:
            key_leaf = node.children[0].leaves[0]
            key_leaf.reps.append(at)
            key_leaf.defs.append(level + 1)
            key_leaf.values.append(entry[0])
            _shred(node.children[1], entry[1], at, level + 1, inner)
        else:
            _shred(node.children[0], entry[0], at, level + 1, inner)


# --- encodings --------------------------------------------------------------------------------------------------------

def _levels(levels: list[int], max_level: int) -> bytes:
    """The RLE/bit-packing hybrid, as runs only, with v1's 4-byte length prefix (none when the level is 0)."""
    if max_level == 0:
        return b""
    width = (max_level.bit_length() + 7) // 8
    out = bytearray()
    start = 0
    for index in range(1, len(levels) + 1):
        if index == len(levels) or levels[index] != levels[start]:
            out += uvarint((index - start) << 1) + levels[start].to_bytes(width, "little")
            start = index
    return struct.pack("<i", len(out)) + bytes(out)


def _plain(kind: str, values: list[Any]) -> bytes:
    if kind == "string":
        out = bytearray()
        for text in values:
            data = text.encode("utf-8")
            out += struct.pack("<i", len(data)) + data
        return bytes(out)
    if kind == "bool":
        packed = bytearray((len(values) + 7) // 8)
        for index, flag in enumerate(values):
            if flag:
                packed[index >> 3] |= 1 << (index & 7)
        return bytes(packed)
    code = {"int32": "i", "int64": "q", "timestamp_us_utc": "q", "float64": "d"}[kind]
    return struct.pack(f"<{len(values)}{code}", *values)


# --- the file ---------------------------------------------------------------------------------------------------------

def _schema_elements(name: str, ctype: ColumnType, required: bool = False) -> list[list[Field]]:
    repetition = _REQUIRED if required else _OPTIONAL
    if isinstance(ctype, Prim):
        element: list[Field] = [(1, "i32", _PHYSICAL[ctype.kind]), (3, "i32", repetition), (4, "binary", name)]
        if ctype.kind == "string":
            element += [(6, "i32", _UTF8), (10, "struct", [(1, "struct", [])])]
        elif ctype.kind == "timestamp_us_utc":
            unit: list[Field] = [(2, "struct", [])]
            element += [(6, "i32", _TIMESTAMP_MICROS),
                        (10, "struct", [(8, "struct", [(1, "bool", True), (2, "struct", unit)])])]
        return [element]
    if isinstance(ctype, Struct):
        head: list[Field] = [(3, "i32", repetition), (4, "binary", name), (5, "i32", len(ctype.fields))]
        return [head, *(e for child, t in ctype.fields for e in _schema_elements(child, t))]
    if isinstance(ctype, ListOf):
        return [[(3, "i32", repetition), (4, "binary", name), (5, "i32", 1), (6, "i32", _LIST),
                 (10, "struct", [(3, "struct", [])])],
                [(3, "i32", _REPEATED), (4, "binary", "list"), (5, "i32", 1)],
                *_schema_elements("item", ctype.item)]
    return [[(3, "i32", repetition), (4, "binary", name), (5, "i32", 1), (6, "i32", _MAP),
             (10, "struct", [(2, "struct", [])])],
            [(3, "i32", _REPEATED), (4, "binary", "key_value"), (5, "i32", 2)],
            *_schema_elements("key", ctype.key, required=True), *_schema_elements("value", ctype.value)]


def _column_chunk(leaf: _Leaf, offset: int) -> tuple[bytes, list[Field]]:
    try:
        values = _plain(leaf.kind, leaf.values)
    except (struct.error, AttributeError, TypeError) as exc:
        raise ValueError(f"column {'.'.join(leaf.path)}: a value is not of type {leaf.kind}: {exc}") from None
    body = _levels(leaf.reps, leaf.max_rep) + _levels(leaf.defs, leaf.max_def) + values
    header = encode_struct([
        (1, "i32", 0), (2, "i32", len(body)), (3, "i32", len(body)),  # DATA_PAGE, uncompressed
        (5, "struct", [(1, "i32", len(leaf.defs)), (2, "i32", _PLAIN), (3, "i32", _RLE), (4, "i32", _RLE)]),
    ])
    size = len(header) + len(body)
    meta: list[Field] = [
        (1, "i32", _PHYSICAL[leaf.kind]), (2, "list:i32", [_PLAIN, _RLE]), (3, "list:binary", list(leaf.path)),
        (4, "i32", 0), (5, "i64", len(leaf.defs)), (6, "i64", size), (7, "i64", size), (9, "i64", offset),
    ]
    return header + body, [(2, "i64", offset), (3, "struct", meta)]


def write_table(path: str | Path, columns: Columns, rows: Iterable[Any]) -> int:
    """Write ``rows`` (dicts keyed by column name, absent keys null, or tuples in column order) to ``path``
    as Parquet; returns the number of rows. Struct values may be dicts or tuples, map values dicts or pairs."""
    nodes = [_Node(ctype, (name,), 0, 0) for name, ctype in columns]
    names = [name for name, _ in columns]
    count = 0
    for row in rows:
        values = (row.get(name) for name in names) if isinstance(row, dict) else row
        for node, value in zip(nodes, values, strict=True):
            _shred(node, value, 0, 0, 0)
        count += 1
    out = bytearray(_MAGIC)
    chunks: list[Field] = []
    for leaf in (leaf for node in nodes for leaf in node.leaves):
        data, chunk = _column_chunk(leaf, len(out))
        out += data
        chunks.append((0, "struct", chunk))
    schema = [[(4, "binary", "schema"), (5, "i32", len(columns))],
              *(e for name, ctype in columns for e in _schema_elements(name, ctype))]
    group: list[Field] = [(1, "list:struct", [c[2] for c in chunks]), (2, "i64", len(out) - 4), (3, "i64", count)]
    groups = [group] if count else []
    footer = encode_struct([
        (1, "i32", 1), (2, "list:struct", schema), (3, "i64", count), (4, "list:struct", groups),
        (6, "binary", "rebalance-lab parquet_plain"),
    ])
    out += footer + struct.pack("<i", len(footer)) + _MAGIC
    Path(path).write_bytes(bytes(out))
    return count
