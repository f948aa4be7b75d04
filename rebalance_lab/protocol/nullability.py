"""Which request fields may be null, read from Kafka's JSON message schemas, and a check of a decoded body.

Kafka's generated readers (``*RequestData.read``) throw ``RuntimeException("non-nullable field X was
serialized as null")`` when a string, bytes, records, array or struct field outside its
``nullableVersions`` arrives as null; ``RequestContext.parseRequest`` turns that into an
``InvalidRequestException`` and the broker closes the connection without an answer (checked on Kafka
4.4.0: ``tests/unit/protocol/test_nullability.py``). The schema codec reads such nulls as ``None``
(handlers would crash on them), so the codec seam checks every decoded request with this module.

The facts come from the schema JSON (``versions``, ``nullableVersions``, ``fields``, ``commonStructs``),
the format Kafka's ``clients/src/main/resources/common/message/*.json`` files define; nothing here
depends on a codec library. A :class:`Plan` per (schema, version) lists only the fields that can be
null and the arrays/structs that contain such fields, so checking a request visits no more than that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Types that cannot carry a null on the wire (their decoders have no null form).
_PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "int64", "uint32", "float64", "uuid"})
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


class NullInNonNullableField(ValueError):
    """A null where the schema does not allow one; the message is the one Kafka's readers throw."""


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """``"3+"``, ``"0-2"``, ``"5"`` or ``"none"`` as an inclusive range (None for none/absent)."""
    if spec is None or spec.strip() in ("", "none"):
        return None
    spec = spec.strip()
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def _within(spec: str | None, version: int) -> bool:
    bounds = parse_versions(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]


def attribute_name(field_name: str) -> str:
    """``GroupInstanceId`` -> ``group_instance_id`` (the decoded body's attribute names)."""
    return _CAMEL.sub("_", field_name).lower()


def java_name(field_name: str) -> str:
    """``GroupInstanceId`` -> ``groupInstanceId``, as Kafka's generated code names the field in its message."""
    return field_name[:1].lower() + field_name[1:]


@dataclass(frozen=True)
class FieldPlan:
    """One field to look at: refuse a null unless ``nullable``; descend into ``children`` when present."""

    attribute: str
    java_name: str
    nullable: bool
    is_array: bool
    children: tuple[FieldPlan, ...]
    check_elements: bool = False  # an array of strings or bytes: no element may be null


@dataclass(frozen=True)
class Plan:
    fields: tuple[FieldPlan, ...]

    def check(self, body: Any) -> None:
        """Raise :class:`NullInNonNullableField` for the first forbidden null in ``body``."""
        _check_fields(self.fields, body)


def _check_fields(fields: tuple[FieldPlan, ...], node: Any) -> None:
    for plan in fields:
        value = getattr(node, plan.attribute, None)
        if value is None:
            if not plan.nullable:
                raise NullInNonNullableField(f"non-nullable field {plan.java_name} was serialized as null")
            continue
        if plan.check_elements and any(item is None for item in value):
            raise NullInNonNullableField(f"non-nullable field {plan.java_name} element was serialized as null")
        if not plan.children:
            continue
        for item in value if plan.is_array else (value,):
            _check_fields(plan.children, item)


def build_plan(schema: Mapping[str, Any], version: int) -> Plan:
    """The fields of ``schema`` (a request or response JSON) that matter at ``version``."""
    common = {s["name"]: s for s in schema.get("commonStructs", [])}
    return Plan(_plan_fields(schema.get("fields", []), version, common))


def _plan_fields(fields: list[Mapping[str, Any]], version: int, common: Mapping[str, Any]) -> tuple[FieldPlan, ...]:
    plans: list[FieldPlan] = []
    for field in fields:
        if not _within(field.get("versions"), version):
            continue
        plan = _plan_field(field, version, common)
        if plan is not None:
            plans.append(plan)
    return tuple(plans)


def _plan_field(field: Mapping[str, Any], version: int, common: Mapping[str, Any]) -> FieldPlan | None:
    type_name: str = field["type"]
    is_array = type_name.startswith("[]")
    element = type_name[2:] if is_array else type_name
    if not is_array and element in _PRIMITIVES:
        return None
    children: tuple[FieldPlan, ...] = ()
    nested = field.get("fields") or common.get(element, {}).get("fields")
    if nested and element not in _PRIMITIVES:
        children = _plan_fields(nested, version, common)
    # An absent tagged field decodes as None here and as its default in Kafka: never a wire null to refuse.
    nullable = _within(field.get("nullableVersions"), version) or _within(field.get("taggedVersions"), version)
    check_elements = is_array and element in ("string", "bytes")
    if nullable and not children and not check_elements:
        return None  # nothing to refuse here and nothing below to look at
    name = field["name"]
    return FieldPlan(attribute_name(name), java_name(name), nullable, is_array, children, check_elements)
