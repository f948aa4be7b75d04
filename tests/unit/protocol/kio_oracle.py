"""Build fully populated messages with kio (an independent, ahead-of-time generated codec).

Every field of every version gets a distinctive non-default value, so a field our
codec drops, reorders or mis-sizes changes the bytes.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import itertools
import typing
import uuid
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

_counter = itertools.count(1)


def _scalar(kafka_type: str, name: str) -> Any:
    n = next(_counter)
    values: dict[str, Any] = {
        "bool": True,
        "bytes": bytes([n % 256, 1, 2]),
        "datetime_i64": datetime.datetime.fromtimestamp(1_700_000_000 + n, tz=datetime.UTC),
        "error_code": KioErrorCode.none if n % 2 else KioErrorCode.unknown_server_error,
        "float64": 1.5,
        "int8": n % 100,
        "int16": n % 30000,
        "int32": n * 7,
        "int64": n * 1_000_003,
        "uint16": n % 60000,
        "string": f"{name}-{n}",
        "timedelta_i32": datetime.timedelta(milliseconds=n * 11),
        "timedelta_i64": datetime.timedelta(milliseconds=n * 13),
        "uuid": uuid.UUID(int=n * 99991),
        "records": None,
    }
    return values[kafka_type]


def _wrap(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is getattr(__import__("types"), "UnionType", None):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0]
    if isinstance(hint, type) and not isinstance(value, hint | type(None)):
        try:
            return hint(value)
        except TypeError:
            return value
    return value


def populate_case(entity: type[Any]) -> Any:
    """A fully populated message whose values depend only on its own schema, not on earlier cases.

    The counter restarts, so adding an API elsewhere never changes another case's bytes. The first
    scalar gets 1, so a top-level ErrorCode is NONE: kafka-python decodes an ApiVersions body
    carrying an error as v0 (KIP-511's fallback), whatever version it was written in.
    """
    global _counter
    _counter = itertools.count(1)
    return populate(entity)


def populate(entity: type[Any]) -> Any:
    hints = typing.get_type_hints(entity)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(entity):
        hint = hints[field.name]
        kafka_type = field.metadata.get("kafka_type")
        if kafka_type is None:
            kwargs[field.name] = _compound(hint)
        elif typing.get_origin(_non_null(hint)) is tuple:  # an array of scalars, nullable or not
            hint = _non_null(hint)
            kwargs[field.name] = tuple(_wrap(typing.get_args(hint)[0], _scalar(kafka_type, field.name))
                                       for _ in range(2))
        else:
            kwargs[field.name] = _wrap(hint, _scalar(kafka_type, field.name))
    return entity(**kwargs)


def _non_null(hint: Any) -> Any:
    """``X | None`` -> ``X`` (any other hint unchanged)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if type(None) in typing.get_args(hint) and len(args) == 1 else hint


def _compound(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        inner = typing.get_args(hint)[0]
        return tuple(populate(inner) for _ in range(2))
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:  # a nullable array or struct (KIP-893): give it a value
        return _compound(args[0])
    return populate(hint)


def message_type(api_key: int, version: int, kind: str) -> type[Any]:
    entity_type = EntityType.request if kind == "request" else EntityType.response
    module = load_payload_module(api_key, version, entity_type)
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "__type__", None) == entity_type:
            return value
    raise LookupError(f"kio has no {kind} for api {api_key} v{version}")


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def decode(entity_type: type[Any], data: bytes) -> tuple[Any, int]:
    result: tuple[Any, int] = entity_reader(entity_type)(bytes(data), 0)
    return result
