"""Group records and snapshots as JSON: our own record format for the ``__consumer_offsets-0`` log.

The coordinator's records are frozen dataclasses (or NamedTuples) of plain values (strings, ints, bytes, UUIDs,
enums, tuples, frozensets, mappings). Each is written with its class name and fields, and read back
by calling the class, so a new record type needs no code here. Only classes of the coordinator
package are ever constructed from a file (a data directory is data, never code to run).
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
import uuid
from enum import Enum
from typing import Any

_ALLOWED_PREFIX = "rebalance_lab.coordinator."


class StoredValueError(ValueError):
    """A stored value this version cannot read (unknown class, wrong shape)."""


def dumps(value: object) -> bytes:
    return json.dumps(encode(value), separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    return decode(json.loads(data))


def encode(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return {"$e": _name(type(value)), "v": value.value}
    if isinstance(value, bytes):
        return {"$b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, uuid.UUID):
        return {"$u": str(value)}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        # A NamedTuple value (the classic coordinator's ProtocolEntry): written as a dataclass is, so it is read back
        # as its class, and a file written while it was a frozen dataclass still reads.
        names: tuple[str, ...] = getattr(type(value), "_fields")  # noqa: B009  # typed tuple has no _fields
        return {"$c": _name(type(value)), "f": {k: encode(v) for k, v in zip(names, value, strict=True)}}
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"$f": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$d": [[encode(k), encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"$c": _name(type(value)), "f": fields}
    raise TypeError(f"cannot store a value of type {type(value).__name__}")


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$c" in data:
        cls = _class(data["$c"])
        return cls(**{k: decode(v) for k, v in data["f"].items()})
    if "$e" in data:
        return _class(data["$e"])(data["v"])
    if "$b" in data:
        return base64.b64decode(data["$b"])
    if "$u" in data:
        return uuid.UUID(data["$u"])
    if "$t" in data:
        return tuple(decode(v) for v in data["$t"])
    if "$f" in data:
        return frozenset(decode(v) for v in data["$f"])
    if "$d" in data:
        return {decode(k): decode(v) for k, v in data["$d"]}
    raise StoredValueError(f"unknown stored value {sorted(data)}")


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class(name: str) -> Any:
    module, _, qualname = name.partition(":")
    if not module.startswith(_ALLOWED_PREFIX):
        raise StoredValueError(f"refusing to build {name}: not a coordinator class")
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise StoredValueError(f"unknown stored class {name}") from exc
    if not isinstance(target, type) or not (dataclasses.is_dataclass(target) or issubclass(target, Enum)
                                            or (issubclass(target, tuple) and hasattr(target, "_fields"))):
        raise StoredValueError(f"refusing to build {name}: not a record class")
    return target
