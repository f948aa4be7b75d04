"""Values read from JSON checked against their column types, before anything uses them.

A recording's line is untrusted text: ``json`` gives any of its types in any field, integers of any size, lone
surrogates (``"\\ud800"``) and nesting as deep as the line. Each reader of recordings (the replay's emulator source,
``export`` and ``diagram``) checks a row here first, so a damaged line is one counted diagnostic or one line of
error naming the column, never a traceback later (a sort of mixed types, a dict key that is a list, a Parquet
column refusing a value, ``struct.pack`` refusing a generation beyond int32). Null is always allowed (every column is
nullable); keys a struct does not define are left alone, as the writers ignore them. Standard library only.

Each column type is turned into a checker once (the replay reads every line of a recording through it): exact
``type(...) is`` tests, as ``json`` makes no subclasses, and the column's path is only spelled out for an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rebalance_lab.replay.column_types import Columns, ColumnType, ListOf, MapOf, Prim

Checker = Callable[[Any], None]
_RANGES = {"int32": 2**31, "int64": 2**63, "timestamp_us_utc": 2**63}


class ValueCheckError(ValueError):
    """A value that is not of its column's type; the message names the column."""


class _Bad(Exception):
    """Raised by a checker; the path inside the column is prepended on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def check_columns(row: dict[str, Any], columns: Columns, skip: frozenset[str] = frozenset()) -> None:
    """Raise :class:`ValueCheckError` unless every column of ``row`` named in ``columns`` (but not in ``skip``)
    holds a value of its type (keys outside ``columns`` are the caller's to refuse or ignore)."""
    checkers, text, ints = _plan(columns, skip)
    for name, value in row.items():
        kind = type(value)  # most values are null, plain text of a text column or an integer in range: no call
        if value is None or (kind is str and name in text and value.isascii()):
            continue
        if kind is int:
            bound = ints.get(name)
            if bound is not None and -bound <= value < bound:
                continue
        check = checkers.get(name)
        if check is not None:
            try:
                check(value)
            except _Bad as bad:
                raise ValueCheckError(f"{name}{''.join(reversed(bad.path))}: {bad.reason}") from None


Plan = tuple[dict[str, Checker], frozenset[str], dict[str, int]]  # each column's checker; text columns; int bounds
_plans: dict[tuple[int, frozenset[str]], tuple[Columns, Plan]] = {}


def _plan(columns: Columns, skip: frozenset[str]) -> Plan:
    found = _plans.get((id(columns), skip))
    if found is None or found[0] is not columns:
        kept = [(name, ctype) for name, ctype in columns if name not in skip]
        checkers = {name: _checker(ctype) for name, ctype in kept}
        text = frozenset(name for name, ctype in kept if ctype == Prim("string"))
        ints = {name: _RANGES[ctype.kind] for name, ctype in kept if isinstance(ctype, Prim) and ctype.kind in _RANGES}
        found = _plans[(id(columns), skip)] = (columns, (checkers, text, ints))
    return found[1]


def _checker(ctype: ColumnType) -> Checker:
    if isinstance(ctype, Prim):
        return _prim(ctype.kind)
    if isinstance(ctype, ListOf):
        return _list(_checker(ctype.item))
    if isinstance(ctype, MapOf):
        return _map(_prim(ctype.key.kind), _checker(ctype.value))
    return _struct([(name, _checker(field)) for name, field in ctype.fields])


def _list(item: Checker) -> Checker:
    def check(value: Any) -> None:
        if type(value) is not list:
            raise _Bad(f"expected a list, got {_kind(value)}")
        for i, x in enumerate(value):
            if x is not None:
                try:
                    item(x)
                except _Bad as bad:
                    bad.path.append(f"[{i}]")
                    raise
    return check


def _map(key: Checker, item: Checker) -> Checker:
    def check(value: Any) -> None:
        if type(value) is not dict:
            raise _Bad(f"expected an object, got {_kind(value)}")
        for k, x in value.items():
            try:
                key(k)
                if x is not None:
                    item(x)
            except _Bad as bad:
                bad.path.append(f"[{k!r:.40}]")
                raise
    return check


def _struct(fields: list[tuple[str, Checker]]) -> Checker:
    def check(value: Any) -> None:
        if type(value) is not dict:
            raise _Bad(f"expected an object, got {_kind(value)}")
        for name, field in fields:
            x = value.get(name)
            if x is not None:
                try:
                    field(x)
                except _Bad as bad:
                    bad.path.append(f".{name}")
                    raise
    return check


def _prim(kind: str) -> Checker:
    if kind == "string":
        return _string
    if kind == "bool":
        return _bool
    if kind == "float64":
        return _float
    bound = _RANGES[kind]

    def integer(value: Any) -> None:
        if type(value) is not int:  # (a bool is not an int here: its type is bool)
            raise _Bad(f"expected an integer, got {_kind(value)}")
        if not -bound <= value < bound:
            raise _Bad(f"{_short(value)} is out of the {kind} range")
    return integer


def _string(value: Any) -> None:
    if type(value) is not str:
        raise _Bad(f"expected a string, got {_kind(value)}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Bad("a string with a lone surrogate (not Unicode text)") from None


def _bool(value: Any) -> None:
    if type(value) is not bool:
        raise _Bad(f"expected true or false, got {_kind(value)}")


def _float(value: Any) -> None:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return
    raise _Bad(f"expected a finite number, got {_kind(value)}")


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _short(value: int) -> str:
    text = str(value) if value.bit_length() < 200 else f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 40 else text[:37] + "..."
