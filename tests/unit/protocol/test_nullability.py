"""Nulls in request fields: refused where Kafka's schema forbids them, kept where it allows them.

Kafka's generated readers throw ``non-nullable field X was serialized as null`` and the broker
closes the connection (``integration/test_kafka_limits.py`` shows it on 4.4.0). Our codec seam
decides from the schema JSON (``protocol/nullability.py``); kio, an independent codec generated
ahead of time from the same JSON, is the oracle here: a field kio types as ``X | None`` may be
null, any other string, bytes, array or struct may not. Every API and version the emulator
serves is covered, field by field, nested fields included.
"""

from __future__ import annotations

import copy
import dataclasses
import struct
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from rebalance_lab.protocol import codec, nullability
from rebalance_lab.protocol.errors import MalformedRequest
from tests.unit.protocol import kio_oracle
from tests.unit.protocol.test_codec_vs_kio import CASES, _ids

_PRIMITIVE = {"bool", "int8", "int16", "int32", "int64", "uint16", "float64", "uuid", "error_code",
              "datetime_i64", "timedelta_i32", "timedelta_i64"}


@dataclasses.dataclass(frozen=True)
class NullCase:
    path: tuple[str | int, ...]  # attribute names, 0 for "the first element of this array"
    allowed: bool  # kio says the field may be null


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def _null_cases(entity: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[NullCase]:
    hints = typing.get_type_hints(type(entity))
    for field in dataclasses.fields(entity):
        kafka_type = field.metadata.get("kafka_type")
        value = getattr(entity, field.name)
        if field.metadata.get("tag") is not None or (kafka_type in _PRIMITIVE and not isinstance(value, tuple)):
            continue  # a scalar cannot be null; an array of scalars can
        hint, path = hints[field.name], (*prefix, field.name)
        yield NullCase(path, _optional(hint))
        if isinstance(value, tuple) and value:
            if kafka_type in ("string", "bytes"):
                yield NullCase((*path, 0), False)  # an element of an array of strings or bytes
            elif dataclasses.is_dataclass(value[0]):
                yield from _null_cases(value[0], (*path, 0))
        elif dataclasses.is_dataclass(value):
            yield from _null_cases(value, path)


def _with_null(body: Any, path: tuple[str | int, ...]) -> Any:
    mutated = copy.deepcopy(body)
    node = mutated
    for step in path[:-1]:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    last = path[-1]
    if isinstance(last, int):
        node[last] = None
    else:
        setattr(node, last, None)
    return mutated


def _null_bytes(body: Any, path: tuple[str | int, ...], version: int, flexible: bool) -> bytes:
    """The body with a null at ``path`` on the wire.

    kafka-python writes a null string or bytes as length -1 but a null non-nullable array as an empty
    one, so for an array the empty array's length prefix is found (the first byte where the populated
    encoding differs from the empty one) and replaced by the null length: -1 as int32, 0 as a compact varint.
    """
    data = codec.encode_body(_with_null(body, path), version)
    if isinstance(path[-1], int) or not isinstance(_at(body, path), list):
        return data
    empty = _with_null(body, path)
    setattr(_at(empty, path[:-1]), str(path[-1]), [])
    if codec.encode_body(empty, version) != data:
        return data  # the encoder wrote the null itself
    full = codec.encode_body(body, version)
    first = next(i for i, (a, b) in enumerate(zip(full, data, strict=False)) if a != b)
    if flexible:  # compact length: 1 (empty) -> 0 (null)
        assert data[first] == 1
        return data[:first] + b"\x00" + data[first + 1:]
    start = first - 3
    assert data[start:start + 4] == b"\x00\x00\x00\x00"
    return data[:start] + b"\xff\xff\xff\xff" + data[start + 4:]


def _at(body: Any, path: tuple[str | int, ...]) -> Any:
    node = body
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    return node


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    flexible = codec.is_flexible(api_key, version)
    return struct.pack(">hhih", api_key, version, 5, 1) + b"t" + (b"\x00" if flexible else b"") + body


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_null_is_refused_exactly_where_the_schema_forbids_it(case: tuple[int, int]) -> None:
    api_key, version = case
    entity = kio_oracle.populate_case(kio_oracle.message_type(api_key, version, "request"))
    wire = _frame(api_key, version, kio_oracle.encode(entity))
    body = codec.decode_request_generic(wire).body  # fully populated: no null anywhere, nothing refused
    flexible = codec.is_flexible(api_key, version)
    for null in _null_cases(entity):
        data = _frame(api_key, version, _null_bytes(body, null.path, version, flexible))
        if null.allowed:
            assert codec.decode_request(data).api_key == api_key, null
            continue
        with pytest.raises(MalformedRequest, match=r"non-nullable field \w+ (element )?was serialized as null"):
            codec.decode_request(data)


def test_the_message_names_the_field_as_kafkas_generated_reader_does() -> None:
    request = codec.new_request(11, 5, group_id=None, member_id="", protocol_type="consumer", protocols=[])
    payload = codec.encode_request(request, 7)[4:]
    with pytest.raises(MalformedRequest) as info:
        codec.decode_request(payload)
    assert str(info.value).endswith("non-nullable field groupId was serialized as null")


def test_versions_follow_kafkas_notation() -> None:
    assert nullability.parse_versions("3+") == (3, 0x7FFF)
    assert nullability.parse_versions("0-2") == (0, 2)
    assert nullability.parse_versions("5") == (5, 5)
    assert nullability.parse_versions("none") is None
