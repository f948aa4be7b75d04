"""Thrift's compact protocol, encoding only: what a Parquet footer and page header need (parquet_plain).

A struct is a list of ``(field id, kind, value)`` in increasing id order; kinds are ``i32``, ``i64``,
``binary`` (str or bytes), ``bool``, ``struct`` (a nested list) and ``list:<kind>`` (a Python list).
Unset optional fields are simply left out.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.protocol.wire_primitives import uvarint, varint

Field = tuple[int, str, Any]

_TYPE = {"bool": 1, "i32": 5, "i64": 6, "binary": 8, "list": 9, "struct": 12}
_TRUE, _FALSE = 1, 2


def _value(kind: str, value: Any) -> bytes:
    if kind in ("i32", "i64"):
        return varint(value)
    if kind == "binary":
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return uvarint(len(data)) + data
    if kind == "struct":
        return encode_struct(value)
    if kind.startswith("list:"):
        item = kind[5:]
        size = len(value)
        head = bytes([(size << 4) | _TYPE[item]]) if size < 15 else bytes([0xF0 | _TYPE[item]]) + uvarint(size)
        return head + b"".join(_value(item, v) for v in value)
    raise ValueError(f"thrift kind {kind!r} is not encoded here")


def encode_struct(fields: list[Field]) -> bytes:
    out = bytearray()
    last = 0
    for fid, kind, value in fields:
        ctype = (_TRUE if value else _FALSE) if kind == "bool" else _TYPE[kind.split(":")[0]]
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | ctype)
        else:
            out.append(ctype)
            out += varint(fid)
        if kind != "bool":
            out += _value(kind, value)
        last = fid
    out.append(0)  # stop
    return bytes(out)
