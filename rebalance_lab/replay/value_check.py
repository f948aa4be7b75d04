"""Values read from JSON checked against their column types, before anything uses them.

A recording's line is untrusted text: ``json`` gives any of its types in any field, integers of any size, lone
surrogates (``"\\ud800"``) and nesting as deep as the line. Each reader of recordings (the replay's emulator source,
``export`` and ``diagram``) checks a row here first, so a damaged line is one counted diagnostic or one line of
error naming the column, never a traceback later (a sort of mixed types, a dict key that is a list, a Parquet
column refusing a value, ``struct.pack`` refusing a generation beyond int32). Null is always allowed (every column is
nullable); keys a struct does not define are left alone, as the writers ignore them. Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

from rebalance_lab.replay.column_types import Columns, ColumnType, ListOf, MapOf, Prim, Struct

_RANGES = {"int32": 2**31, "int64": 2**63, "timestamp_us_utc": 2**63}


class ValueCheckError(ValueError):
    """A value that is not of its column's type; the message names the column."""


def check_columns(row: dict[str, Any], columns: Columns, skip: frozenset[str] = frozenset()) -> None:
    """Raise :class:`ValueCheckError` unless every column of ``row`` named in ``columns`` (but not in ``skip``)
    holds a value of its type."""
    for name, ctype in columns:
        if name in skip:
            continue
        value = row.get(name)
        if value is not None:
            _check(value, ctype, name)


def _check(value: Any, ctype: ColumnType, where: str) -> None:
    if value is None:
        return
    if isinstance(ctype, Prim):
        _check_prim(value, ctype.kind, where)
    elif isinstance(ctype, ListOf):
        if not isinstance(value, list):
            raise ValueCheckError(f"{where}: expected a list, got {_kind(value)}")
        for i, item in enumerate(value):
            _check(item, ctype.item, f"{where}[{i}]")
    elif isinstance(ctype, MapOf):
        if not isinstance(value, dict):
            raise ValueCheckError(f"{where}: expected an object, got {_kind(value)}")
        for key, item in value.items():
            _check_prim(key, ctype.key.kind, f"{where} key")
            _check(item, ctype.value, f"{where}[{key!r}]")
    else:
        _check_struct(value, ctype, where)


def _check_struct(value: Any, ctype: Struct, where: str) -> None:
    if not isinstance(value, dict):
        raise ValueCheckError(f"{where}: expected an object, got {_kind(value)}")
    for name, field_type in ctype.fields:
        item = value.get(name)
        if item is not None:
            _check(item, field_type, f"{where}.{name}")


def _check_prim(value: Any, kind: str, where: str) -> None:
    if kind == "string":
        if not isinstance(value, str):
            raise ValueCheckError(f"{where}: expected a string, got {_kind(value)}")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueCheckError(f"{where}: a string with a lone surrogate (not Unicode text)") from None
    elif kind == "bool":
        if not isinstance(value, bool):
            raise ValueCheckError(f"{where}: expected true or false, got {_kind(value)}")
    elif kind == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                (isinstance(value, float) and not math.isfinite(value)):
            raise ValueCheckError(f"{where}: expected a finite number, got {_kind(value)}")
    else:  # the integer kinds
        bound = _RANGES[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueCheckError(f"{where}: expected an integer, got {_kind(value)}")
        if not -bound <= value < bound:
            raise ValueCheckError(f"{where}: {_short(value)} is out of the {kind} range")


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _short(value: int) -> str:
    text = str(value) if value.bit_length() < 200 else f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 40 else text[:37] + "..."
