"""The YAML (or plain dict) form of a scenario, turned into :class:`Scenario` values.

A step is a mapping with exactly one action key; its value is the member list for
member actions (``join: [a, b]``), the main argument for a few others
(``describe: g``, ``wait_ms: 100``, ``find_coordinator: g``, ``delete: [g]``), or a
mapping of options. The step's other keys are options too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.scenarios.consumer_model import consumers_from_dict
from rebalance_lab.scenarios.model import (
    ACTIONS,
    MEMBER_ACTIONS,
    MemberSpec,
    ProtocolSpec,
    Scenario,
    ScenarioError,
    Step,
    as_tuple,
)

_MAIN_ARGUMENT = {"describe": "groups", "delete": "groups", "wait_ms": "ms", "find_coordinator": "key",
                  "leave_batch": "identities", "cg_describe": "groups", "create_topic": "topic",
                  "create_partitions": "topic", "delete_topic": "topic", "api_versions": "keys"}
_MEMBER_KEYS = frozenset({"client_id", "group", "protocols", "group_instance_id", "instance_id", "protocol_type",
                          "session_timeout_ms", "rebalance_timeout_ms", "join_version", "topics"})
_SCENARIO_KEYS = frozenset({"name", "description", "lesson", "group", "members", "steps", "topics", "versions",
                            "defaults", "initial_rebalance_delay_ms", "min_session_timeout_ms", "stagger_ms",
                            "settle_ms", "timeout_ms", "unique_names", "consumers", "broker", "requires", "flavors"})


def load_scenario(source: str | Path | Mapping[str, Any] | Scenario) -> Scenario:
    """A scenario from a YAML file path, a parsed mapping, or an existing :class:`Scenario`."""
    if isinstance(source, Scenario):
        return source.validate()
    if isinstance(source, str | Path):
        path = Path(source)
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{path}: a scenario is a YAML mapping")
        data = {"name": path.stem, **data}
        return scenario_from_dict(data)
    return scenario_from_dict(source)


def scenario_from_dict(data: Mapping[str, Any]) -> Scenario:
    unknown = set(data) - _SCENARIO_KEYS
    if unknown:
        raise ScenarioError(f"unknown scenario keys {sorted(unknown)}")
    group = str(data.get("group", "g"))
    defaults = dict(data.get("defaults") or {})
    members = {
        str(alias): member_from_dict(str(alias), {**defaults, **(spec or {})}, group)
        for alias, spec in (data.get("members") or {}).items()
    }
    steps = tuple(step_from_dict(raw) for raw in data.get("steps") or ())
    consumers = consumers_from_dict(data.get("consumers") or {}, steps, group)
    return Scenario(
        name=str(data.get("name", "scenario")),
        description=str(data.get("description", "")),
        lesson=" ".join(str(data.get("lesson", "")).split()),
        group=group,
        members=members,
        steps=steps,
        topics={str(t): int(n) for t, n in (data.get("topics") or {}).items()},
        versions={str(k): int(v) for k, v in (data.get("versions") or {}).items()},
        initial_rebalance_delay_ms=int(data.get("initial_rebalance_delay_ms", 0)),
        min_session_timeout_ms=int(data.get("min_session_timeout_ms", 6_000)),
        stagger_ms=int(data.get("stagger_ms", 20)),
        settle_ms=int(data.get("settle_ms", 300)),
        timeout_ms=int(data.get("timeout_ms", 15_000)),
        unique_names=bool(data.get("unique_names", True)),
        consumers=consumers,
        broker={str(k): _property(v) for k, v in (data.get("broker") or {}).items()},
        requires=as_tuple(data.get("requires")),
        flavors=as_tuple(data.get("flavors")),
    ).validate()


def _property(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def member_from_dict(alias: str, spec: Mapping[str, Any], default_group: str) -> MemberSpec:
    unknown = set(spec) - _MEMBER_KEYS
    if unknown:
        raise ScenarioError(f"member {alias}: unknown keys {sorted(unknown)}")
    topics = tuple(str(t) for t in spec.get("topics") or ())
    protocols = tuple(protocol_from_value(p, topics) for p in spec.get("protocols") or ("range",))
    instance = spec.get("group_instance_id", spec.get("instance_id"))
    return MemberSpec(
        alias=alias,
        client_id=str(spec.get("client_id", alias)),
        group=str(spec.get("group", default_group)),
        protocols=protocols,
        group_instance_id=None if instance is None else str(instance),
        protocol_type=str(spec.get("protocol_type", cp.PROTOCOL_TYPE)),
        session_timeout_ms=int(spec.get("session_timeout_ms", 10_000)),
        rebalance_timeout_ms=int(spec.get("rebalance_timeout_ms", 10_000)),
        join_version=None if spec.get("join_version") is None else int(spec["join_version"]),
    )


def protocol_from_value(value: Any, default_topics: tuple[str, ...]) -> ProtocolSpec:
    """``range`` | ``{assignor: range, topics: [t]}`` | ``{name: x, hex: "0001..."}`` | with
    ``user_data`` (hex), ``owned`` ({topic: [partitions]}), ``generation``, ``rack``, ``version``."""
    if isinstance(value, str):
        return ProtocolSpec(name=value, topics=default_topics)
    if not isinstance(value, Mapping):
        raise ScenarioError(f"a protocol is a name or a mapping, not {value!r}")
    name = value.get("name", value.get("assignor"))
    if name is None:
        raise ScenarioError(f"protocol {dict(value)} needs a name or an assignor")
    raw = value.get("hex", value.get("metadata"))
    if raw is not None:
        return ProtocolSpec(name=str(name), raw=parse_hex(raw))
    user_data = value.get("user_data")
    return ProtocolSpec(
        name=str(name),
        topics=tuple(str(t) for t in value.get("topics", default_topics)),
        user_data=None if user_data is None else parse_hex(user_data),
        owned=tuple(partition_list(value.get("owned") or {})),
        generation=None if value.get("generation") is None else int(value["generation"]),
        rack=None if value.get("rack") is None else str(value["rack"]),
        version=int(value.get("version", cp.HIGHEST_VERSION)),
    )


def parse_hex(value: Any) -> bytes:
    text = str(value).replace(" ", "").removeprefix("0x")
    try:
        return bytes.fromhex(text)
    except ValueError as exc:
        raise ScenarioError(f"not hex bytes: {value!r}") from exc


def partition_list(mapping: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``{t: [0, 1], u: [2]}`` -> [(t, 0), (t, 1), (u, 2)], in the order written."""
    return [(str(topic), int(p)) for topic, partitions in mapping.items() for p in (partitions or ())]


def step_from_dict(raw: Any) -> Step:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"a step is a mapping with one action key, not {raw!r}")
    actions = [key for key in raw if key in ACTIONS]
    if len(actions) != 1:
        raise ScenarioError(f"a step needs exactly one action key, got {sorted(map(str, raw))}")
    action = str(actions[0])
    value = raw[action]
    options = {str(k): v for k, v in raw.items() if k != action}
    members: tuple[str, ...] = as_tuple(options.pop("members", options.pop("member", None)))
    if action in MEMBER_ACTIONS:
        members = as_tuple(value) or members
    elif isinstance(value, Mapping):
        members = as_tuple(value.get("members", value.get("member"))) or members
        options.update({str(k): v for k, v in value.items() if k not in ("members", "member")})
    elif value is not None:
        key = _MAIN_ARGUMENT.get(action)
        if key is None:
            members = as_tuple(value)  # commit: a / fetch: a -- the member that sends it
        else:
            options[key] = list(as_tuple(value)) if key == "groups" else value
    if action == "api_versions" and "keys" in options:
        options["keys"] = [int(k) for k in as_tuple(options["keys"])]
    if isinstance(options.get("groups"), str):
        options["groups"] = [options["groups"]]
    return Step(action, members, options)
