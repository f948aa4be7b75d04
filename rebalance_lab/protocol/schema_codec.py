"""Read and write message bodies by their schema: one plan per struct, version and encoding, made once.

Kafka's wire rules (``org.apache.kafka.common.protocol``, the generated ``*Data.read/write``): fixed-size
numbers big-endian; in a flexible version strings, bytes and arrays are "compact" (unsigned varint length + 1,
0 for null) and every struct ends with its tagged fields (a count, then tag, size and value of each, in tag
order); otherwise strings have an int16 length, bytes and arrays an int32 count, -1 for null. A nullable
struct (KIP-893) has an int8 prefix, -1 for null. A UUID of zeros reads as None and None writes zeros.

The plan of a struct is a list of steps: runs of fixed-size fields read or written with one ``struct`` call,
and one reader or writer per other field. Tagged fields are written when they differ from their default.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from functools import cache
from itertools import islice
from typing import Any

from rebalance_lab.protocol.schema_model import FieldSpec, Message, StructSpec, bits_of
from rebalance_lab.protocol.wire_primitives import uvarint

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, list[bytes]], None]

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d",
          "bool": "?"}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ZERO_UUID = bytes(16)


class WireError(ValueError):
    """Bytes that do not read as the schema says (too short, a bad length, a varint too long)."""


# -- varints -----------------------------------------------------------------------------------------------------

def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("varint runs past the end")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise WireError("varint is longer than 5 bytes")


def skip_tags(data: bytes, pos: int) -> int:
    """Past a tagged-field section none of whose fields is read (a header's)."""
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        _, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
    if pos > len(data):
        raise WireError("a tagged field runs past the end")
    return pos


# -- scalars -----------------------------------------------------------------------------------------------------

def _slice(data: bytes, pos: int, size: int) -> bytes:
    end = pos + size
    if size < 0 or end > len(data):
        raise WireError(f"a value of {size} bytes runs past the end")
    return data[pos:end]


def _length(data: bytes, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length prefix: -1 for null."""
    if flexible:
        value, pos = read_uvarint(data, pos)
        return value - 1, pos
    if wide:
        return _I32.unpack_from(data, pos)[0], pos + 4
    return _I16.unpack_from(data, pos)[0], pos + 2


def _string_reader(flexible: bool) -> Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        size, pos = _length(data, pos, flexible, False)
        if size < 0:
            return None, pos
        return _slice(data, pos, size).decode("utf-8"), pos + size
    return read


def _bytes_reader(flexible: bool) -> Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        size, pos = _length(data, pos, flexible, True)
        if size < 0:
            return None, pos
        return _slice(data, pos, size), pos + size
    return read


def _read_uuid(data: bytes, pos: int) -> tuple[Any, int]:
    raw = _slice(data, pos, 16)
    return (None if raw == _ZERO_UUID else uuid.UUID(bytes=raw)), pos + 16


def _fixed_reader(kind: str) -> Reader:
    shape = struct.Struct(">" + _FIXED[kind])

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return shape.unpack_from(data, pos)[0], pos + shape.size
    return read


_U32 = struct.Struct(">I")


def _read_bits(data: bytes, pos: int) -> tuple[Any, int]:
    return bits_of(_U32.unpack_from(data, pos)[0]), pos + 4


def _write_bits(value: Any, out: list[bytes]) -> None:
    bits = {31} if value is None else value
    out.append(_U32.pack(sum(1 << bit for bit in bits)))


def _scalar_reader(kind: str, flexible: bool) -> Reader:
    if kind == "bitfield":
        return _read_bits
    if kind in _FIXED:
        return _fixed_reader(kind)
    if kind == "string":
        return _string_reader(flexible)
    if kind == "uuid":
        return _read_uuid
    return _bytes_reader(flexible)


def _prefix(size: int | None, flexible: bool, wide: bool) -> bytes:
    if flexible:
        return uvarint(0 if size is None else size + 1)
    if wide:
        return _I32.pack(-1 if size is None else size)
    return _I16.pack(-1 if size is None else size)


def _string_writer(flexible: bool) -> Writer:
    null = _prefix(None, flexible, False)

    def write(value: Any, out: list[bytes]) -> None:
        if value is None:
            out.append(null)
            return
        raw = str(value).encode("utf-8")
        out.append(_prefix(len(raw), flexible, False))
        out.append(raw)
    return write


def _bytes_writer(flexible: bool) -> Writer:
    null = _prefix(None, flexible, True)

    def write(value: Any, out: list[bytes]) -> None:
        if value is None:
            out.append(null)
            return
        raw = value.encode() if isinstance(value, str) else bytes(value)
        out.append(_prefix(len(raw), flexible, True))
        out.append(raw)
    return write


def _write_uuid(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(_ZERO_UUID)
    else:
        out.append(value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes)


def _fixed_writer(kind: str) -> Writer:
    pack = struct.Struct(">" + _FIXED[kind]).pack

    def write(value: Any, out: list[bytes]) -> None:
        out.append(pack(value))
    return write


def _scalar_writer(kind: str, flexible: bool) -> Writer:
    if kind == "bitfield":
        return _write_bits
    if kind in _FIXED:
        return _fixed_writer(kind)
    if kind == "string":
        return _string_writer(flexible)
    if kind == "uuid":
        return _write_uuid
    return _bytes_writer(flexible)


# -- fields ------------------------------------------------------------------------------------------------------

def _element_reader(f: FieldSpec, version: int, flexible: bool) -> Reader:
    if f.struct is not None:
        return struct_reader(f.struct, version, flexible)
    return _scalar_reader(f.type, flexible)


@cache
def field_reader(f: FieldSpec, version: int, flexible: bool) -> Reader:
    element = _element_reader(f, version, flexible)
    if f.is_array:
        def read_array(data: bytes, pos: int) -> tuple[Any, int]:
            count, pos = _length(data, pos, flexible, True)
            if count < 0:
                return None, pos
            if count > len(data) - pos:  # every element takes at least one byte
                raise WireError(f"an array of {count} elements runs past the end")
            items = []
            for _ in range(count):
                item, pos = element(data, pos)
                items.append(item)
            return items, pos
        return read_array
    if f.struct is not None and f.nullable_in(version):
        def read_nullable(data: bytes, pos: int) -> tuple[Any, int]:
            if _slice(data, pos, 1)[0] == 0xFF:
                return None, pos + 1
            return element(data, pos + 1)
        return read_nullable
    return element


# Elements of a big array encoded, then joined, at a time (issue 17): a 250,000-topic Metadata answer made ~2 million
# parts of a few bytes each (~35-50 bytes of object apiece) before the one join, ~60 MiB more than the answer's size
_ARRAY_RUN = 2_000


def _write_runs(items: Any, element: Writer, out: list[bytes]) -> None:
    remaining = iter(items)
    for _ in range(0, len(items), _ARRAY_RUN):
        run: list[bytes] = []
        for item in islice(remaining, _ARRAY_RUN):
            element(item, run)
        out.append(b"".join(run))


@cache
def field_writer(f: FieldSpec, version: int, flexible: bool) -> Writer:
    element = struct_writer(f.struct, version, flexible) if f.struct is not None else _scalar_writer(f.type, flexible)
    if f.is_array:
        null = _prefix(None, flexible, True)

        def write_array(value: Any, out: list[bytes]) -> None:
            if value is None:
                out.append(null)
                return
            out.append(_prefix(len(value), flexible, True))
            if len(value) > _ARRAY_RUN:
                _write_runs(value, element, out)
                return
            for item in value:
                element(item, out)
        return write_array
    if f.struct is not None and f.nullable_in(version):
        def write_nullable(value: Any, out: list[bytes]) -> None:
            if value is None:
                out.append(b"\xff")
            else:
                out.append(b"\x01")
                element(value, out)
        return write_nullable
    return element


# -- structs -----------------------------------------------------------------------------------------------------

def _runs(fields: list[FieldSpec]) -> list[list[FieldSpec]]:
    """Consecutive fixed-size scalars grouped (one ``struct`` call each); every other field alone."""
    runs: list[list[FieldSpec]] = []
    for f in fields:
        fixed = not f.is_array and f.struct is None and f.type in _FIXED
        if fixed and runs and runs[-1][0].type in _FIXED and not runs[-1][0].is_array and runs[-1][0].struct is None:
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


@cache
def struct_reader(spec: StructSpec, version: int, flexible: bool) -> Reader:
    fields = [f for f in spec.fields if f.for_version_q(version)]
    untagged = [f for f in fields if not (flexible and f.tagged_in(version))]
    tagged = {f.tag: f for f in fields if flexible and f.tagged_in(version)}
    steps: list[tuple[tuple[str, ...], Any, Reader | None]] = []
    for run in _runs(untagged):
        if len(run) > 1 or (run[0].type in _FIXED and not run[0].is_array and run[0].struct is None):
            steps.append((tuple(f.name for f in run), struct.Struct(">" + "".join(_FIXED[f.type] for f in run)), None))
        else:
            steps.append(((run[0].name,), None, field_reader(run[0], version, flexible)))
    cls = spec.data_class

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        obj = cls.__new__(cls)
        obj._version = version
        for names, shape, reader in steps:
            if reader is None:
                for name, value in zip(names, shape.unpack_from(data, pos), strict=True):
                    setattr(obj, name, value)
                pos += shape.size
            else:
                value, pos = reader(data, pos)
                setattr(obj, names[0], value)
        if flexible:
            pos = _read_tags(data, pos, obj, tagged, version)
        return obj, pos
    return read


def _read_tags(data: bytes, pos: int, obj: Message, tagged: dict[int | None, FieldSpec], version: int) -> int:
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        end = pos + size
        if end > len(data):
            raise WireError(f"tagged field {tag} runs past the end")
        f = tagged.get(tag)
        if f is not None:  # an unknown tag is skipped, as Kafka's readers keep it aside unread
            value, _ = field_reader(f, version, True)(data[pos:end], 0)
            setattr(obj, f.name, value)
        pos = end
    return pos


@cache
def struct_writer(spec: StructSpec, version: int, flexible: bool) -> Writer:
    fields = [f for f in spec.fields if f.for_version_q(version)]
    untagged = [f for f in fields if not (flexible and f.tagged_in(version))]
    tagged = sorted((f for f in fields if flexible and f.tagged_in(version)), key=lambda f: f.tag or 0)
    steps: list[tuple[tuple[str, ...], Any, Writer | None]] = []
    for run in _runs(untagged):
        if len(run) > 1 or (run[0].type in _FIXED and not run[0].is_array and run[0].struct is None):
            steps.append((tuple(f.name for f in run), struct.Struct(">" + "".join(_FIXED[f.type] for f in run)), None))
        else:
            steps.append(((run[0].name,), None, field_writer(run[0], version, flexible)))

    def write(obj: Any, out: list[bytes]) -> None:
        if not isinstance(obj, Message):  # a tuple (positional, untagged fields) or a dict, as kafka-python took
            obj = spec.data_class(*obj, version=version) if isinstance(obj, tuple) else spec.data_class(
                version=version, **obj)
        for names, shape, writer in steps:
            if writer is None:
                out.append(shape.pack(*[getattr(obj, name) for name in names]))
            else:
                writer(getattr(obj, names[0]), out)
        if flexible:
            _write_tags(obj, out, tagged, version)
    return write


def _write_tags(obj: Any, out: list[bytes], tagged: list[FieldSpec], version: int) -> None:
    present = [(f, value) for f in tagged if (value := getattr(obj, f.name)) != f.default()]
    out.append(uvarint(len(present)))
    for f, value in present:
        part: list[bytes] = []
        field_writer(f, version, True)(value, part)
        raw = b"".join(part)
        out += [uvarint(f.tag or 0), uvarint(len(raw)), raw]


def decode(cls: type[Message], data: bytes, version: int, flexible: bool, pos: int = 0) -> tuple[Any, int]:
    """A message body of ``cls`` at ``version`` read from ``data[pos:]``: (message, position after it)."""
    try:
        return struct_reader(cls._spec, version, flexible)(data, pos)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise WireError(f"{type(exc).__name__}: {exc}") from exc


def encode_into(message: Any, version: int, flexible: bool, out: list[bytes]) -> None:
    struct_writer(type(message)._spec, version, flexible)(message, out)
