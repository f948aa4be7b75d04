"""Message classes made from Kafka's JSON message schemas (``schemas/kafka_messages.json`` and our own files).

Each struct of a schema (the message itself, every nested struct, every common struct) becomes a class with one
slot per field, named as the rest of the package reads them (``GroupInstanceId`` -> ``group_instance_id``):

* ``Message(**fields)`` sets the fields given; with ``version=`` (or through ``Message[version]``) the other
  fields of that version take their schema default; a field that was never set reads as its default;
* a nested struct's class is an attribute of its owner (``JoinGroupResponse.JoinGroupResponseMember``);
* ``message.version`` is the version it was decoded in or made for; ``to_dict()`` lists the fields of it.

Defaults follow Kafka's schema rules (``FieldSpec.java``): numbers 0 or the given literal, booleans false,
strings the given text (empty when none), ``"null"`` for null, arrays empty, a UUID the zero UUID (read as
None here, as the codec decodes it), a struct a default instance. Nothing here knows the wire: see
:mod:`rebalance_lab.protocol.schema_codec`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rebalance_lab.protocol.nullability import parse_versions

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
SCALARS = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string",
                     "bytes", "records", "bitfield"})
_INT_MIN = -(1 << 31)
_NEVER = (-1, -1)


def attribute_name(schema_name: str) -> str:
    return _CAMEL.sub("_", schema_name).lower()


def _versions(spec: str | None) -> tuple[int, int]:
    return parse_versions(spec) or _NEVER


@dataclass(eq=False)
class FieldSpec:
    """One field of a struct: its wire type and the versions where it exists, is nullable or tagged."""

    name: str  # the attribute name
    type: str  # the element type for arrays ("int32", "string", or a struct name)
    is_array: bool
    versions: tuple[int, int]
    nullable: tuple[int, int]
    tagged: tuple[int, int]
    tag: int | None
    default_text: str
    struct: StructSpec | None = None

    def for_version_q(self, version: int) -> bool:
        """Whether the field exists in ``version`` (the name kafka-python's fields use; callers read it)."""
        return self.versions[0] <= version <= self.versions[1]

    def nullable_in(self, version: int) -> bool:
        return self.nullable[0] <= version <= self.nullable[1]

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and self.tagged[0] <= version <= self.tagged[1]

    def default(self) -> Any:
        """A fresh default value (a new list or struct each time: callers may change it)."""
        text = self.default_text
        if self.is_array:
            return None if text == "null" else []
        if self.struct is not None:
            return None if text == "null" or self.tag is not None else self.struct.data_class()
        return _scalar_default(self.type, text)


def bits_of(value: int) -> set[int] | None:
    """An int32 bit field as the set of its bit numbers; INT_MIN (bit 31 alone: "not given") as None."""
    value &= 0xFFFFFFFF
    return None if value == 1 << 31 else {bit for bit in range(32) if value >> bit & 1}


def _scalar_default(kind: str, text: str) -> Any:
    if kind == "bitfield":
        return bits_of(int(text or _INT_MIN))
    if kind == "bool":
        return text.lower() == "true"
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(text, 16) if text.lower().startswith("0x") else int(text or 0)
    if kind == "float64":
        return float(text or 0)
    if kind == "uuid":
        return None if not text or uuid.UUID(text).int == 0 else uuid.UUID(text)
    if text == "null":
        return None
    if kind == "string":
        return text
    return b""


@dataclass(eq=False)
class StructSpec:
    name: str
    fields: list[FieldSpec] = field(default_factory=list)
    by_name: dict[str, FieldSpec] = field(default_factory=dict)
    data_class: type[Message] = field(init=False)

    def in_version(self, version: int) -> list[FieldSpec]:
        return [f for f in self.fields if f.for_version_q(version)]


class _Fields:
    """``Message._struct.fields``: the field specs by attribute name (the fault controller reads them)."""

    def __init__(self, spec: StructSpec) -> None:
        self.fields: Mapping[str, FieldSpec] = spec.by_name


class Message:
    """A struct of a Kafka message; subclasses are made per schema struct by :func:`build_message`."""

    __slots__ = ("_header", "_version")
    _spec: ClassVar[StructSpec]
    _struct: ClassVar[_Fields]

    def __init__(self, *args: Any, version: int | None = None, **values: Any) -> None:
        self._version = version
        spec = self._spec
        if args:
            names = [f.name for f in (spec.in_version(version) if version is not None else spec.fields)
                     if version is None or not f.tagged_in(version)]
            if len(args) > len(names):
                raise TypeError(f"{spec.name} takes at most {len(names)} positional fields, got {len(args)}")
            values.update(zip(names, args, strict=False))
        for name, value in values.items():
            if name not in spec.by_name:
                raise ValueError(f"unknown field {name!r} for {spec.name}")
            object.__setattr__(self, name, value)
        if version is not None:
            for f in spec.fields:
                if f.name not in values and f.for_version_q(version):
                    object.__setattr__(self, f.name, f.default())

    def __getattr__(self, name: str) -> Any:
        spec = type(self)._spec.by_name.get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return spec.default()

    @property
    def version(self) -> int | None:
        return self._version

    @property
    def header(self) -> Any:
        """The header a decoded request or response came with (``correlation_id``, ...), else None."""
        return getattr(self, "_header", None)

    @property
    def API_VERSION(self) -> int | None:  # the name kafka-python's messages give it
        return self._version

    def _shown(self) -> Iterator[FieldSpec]:
        version = self._version
        return iter(self._spec.fields if version is None else self._spec.in_version(version))

    def to_dict(self, json: bool = True) -> dict[str, Any]:
        """The fields of this version (all fields without one); nested structs as dicts; ``json``: UUIDs and bytes
        as text (kafka-python's ``to_dict`` does the same)."""
        out: dict[str, Any] = {}
        for f in self._shown():
            value = getattr(self, f.name)
            if f.struct is not None and value is not None:
                value = [v.to_dict(json) for v in value] if f.is_array else value.to_dict(json)
            elif json and value is not None:
                value = _json_value(f.type, value)
            out[f.name] = value
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in self._spec.fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        shown = [] if self._version is None else [f"version={self._version}"]
        shown += [f"{f.name}={getattr(self, f.name)!r}" for f in self._shown()]
        return f"{type(self).__name__}({', '.join(shown)})"


def _json_value(kind: str, value: Any) -> Any:
    if kind == "uuid":
        return str(value)
    if kind in ("bytes", "records"):
        return bytes(value).decode(errors="backslashreplace")
    return value


class _Versioned(type):
    """``Message[version]``: a constructor of that version (``JoinGroupRequest[9](group_id=...)``)."""

    def __getitem__(cls, version: int) -> Callable[..., Any]:
        info: MessageInfo | None = getattr(cls, "_info", None)
        if info is not None and not info.valid_versions[0] <= version <= info.valid_versions[1]:
            low, high = info.valid_versions
            raise ValueError(f"{info.name} has no version {version} (versions {low}-{high})")

        def make(*args: Any, **values: Any) -> Any:
            return cls(*args, version=version, **values)
        return make


@dataclass(frozen=True)
class MessageInfo:
    """A request or response message: its API key, name, kind, versions and the schema it came from."""

    api_key: int
    name: str
    kind: str  # "request" or "response"
    valid_versions: tuple[int, int]
    flexible: tuple[int, int]
    schema: Mapping[str, Any]

    def flexible_in(self, version: int) -> bool:
        return self.flexible[0] <= version <= self.flexible[1]


def build_message(schema: Mapping[str, Any]) -> type[Message]:
    """The message class of one schema (request or response), with its nested classes as attributes."""
    common = {s["name"]: s for s in schema.get("commonStructs", [])}
    made: dict[str, StructSpec] = {}
    top = _struct(schema["name"], schema.get("fields", []), common, made, versioned=True)
    info = MessageInfo(int(schema["apiKey"]), schema["name"], schema["type"], _versions(schema["validVersions"]),
                       _versions(schema.get("flexibleVersions")), schema)
    cls = top.data_class
    cls._info = info  # type: ignore[attr-defined]
    # what tests written for kafka-python's classes read: the schema and whether a version is flexible
    cls._json = schema  # type: ignore[attr-defined]
    cls.flexible_version_q = staticmethod(info.flexible_in)  # type: ignore[attr-defined]
    cls.API_KEY = info.api_key  # type: ignore[attr-defined]
    if "name" not in top.by_name:
        cls.name = info.name  # type: ignore[attr-defined]
    for spec in made.values():  # every struct reachable from the message too (a direct child keeps its own)
        if spec is not top and not hasattr(cls, spec.name):
            setattr(cls, spec.name, spec.data_class)
    return cls


def _struct(name: str, fields: list[Mapping[str, Any]], common: Mapping[str, Any], made: dict[str, StructSpec],
            versioned: bool = False) -> StructSpec:
    spec = StructSpec(name)
    made.setdefault(name, spec)
    for raw in fields:
        kind: str = raw["type"]
        element = kind[2:] if kind.startswith("[]") else kind
        f = FieldSpec(attribute_name(raw["name"]), element, kind.startswith("[]"), _versions(raw.get("versions")),
                      _versions(raw.get("nullableVersions")), _versions(raw.get("taggedVersions")), raw.get("tag"),
                      str(raw.get("default", "")))
        if element not in SCALARS:
            nested = raw.get("fields")
            if nested is None:  # a common struct, shared by name
                f.struct = made.get(element) or _struct(element, common[element]["fields"], common, made)
            else:
                f.struct = _struct(element, nested, common, made)
        spec.fields.append(f)
        spec.by_name[f.name] = f
    meta = _Versioned if versioned else type
    namespace: dict[str, Any] = {"__slots__": tuple(f.name for f in spec.fields), "_spec": spec,
                                 "_struct": _Fields(spec)}
    spec.data_class = meta(name, (Message,), namespace)
    for f in spec.fields:
        if f.struct is not None and f.struct.name != name:
            setattr(spec.data_class, f.struct.name, f.struct.data_class)
    return spec
