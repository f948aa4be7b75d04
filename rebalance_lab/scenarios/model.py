"""What a scenario is: members, topics and an ordered list of steps.

The YAML format and the Python DSL (:mod:`.dsl`) both produce these values; every
field is validated here, at the edge, so the runner can trust them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol import consumer_protocol as cp


class ScenarioError(ValueError):
    """A scenario that cannot be run as written."""


@dataclass(frozen=True)
class ProtocolSpec:
    """One JoinGroup protocol: raw metadata bytes, or a consumer-protocol subscription."""

    name: str
    raw: bytes | None = None
    topics: tuple[str, ...] = ()
    user_data: bytes | None = None
    owned: tuple[tuple[str, int], ...] = ()
    generation: int | None = None
    rack: str | None = None
    version: int = cp.HIGHEST_VERSION


@dataclass(frozen=True)
class MemberSpec:
    alias: str
    client_id: str
    group: str
    protocols: tuple[ProtocolSpec, ...]
    group_instance_id: str | None = None
    protocol_type: str = cp.PROTOCOL_TYPE
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 10_000
    join_version: int | None = None


# Every action and the options it accepts (beyond "members", "wait", "expect", "version").
ACTIONS: dict[str, frozenset[str]] = {
    "join": frozenset({"member_id", "instance_id", "protocols", "protocol_type", "session_timeout_ms",
                       "rebalance_timeout_ms", "reason", "connection"}),
    "sync": frozenset({"assignments", "generation", "member_id", "instance_id", "protocol_type",
                       "protocol_name", "connection"}),
    "heartbeat": frozenset({"generation", "member_id", "instance_id", "connection"}),
    "leave": frozenset({"member_id", "instance_id", "reason", "connection"}),
    "leave_batch": frozenset({"identities", "group"}),
    "commit": frozenset({"offsets", "generation", "member_id", "instance_id", "metadata", "group", "connection"}),
    "fetch": frozenset({"topics", "group", "require_stable", "connection", "member_id", "member_epoch"}),
    "describe": frozenset({"groups", "include_authorized_operations"}),
    "list": frozenset({"states", "types"}),
    "delete": frozenset({"groups"}),
    "find_coordinator": frozenset({"key", "keys", "key_type"}),
    "await": frozenset(),
    "wait_ms": frozenset({"ms"}),
    "close": frozenset(),
    # KIP-848 (consumer_model.py says what each option means)
    "cg_heartbeat": frozenset({"epoch", "member_id", "instance_id", "rack_id", "rebalance_timeout_ms", "topics",
                               "regex", "server_assignor", "owned", "connection"}),
    "cg_describe": frozenset({"groups", "include_authorized_operations"}),
    "create_topic": frozenset({"topic", "partitions"}),
    "create_partitions": frozenset({"topic", "count"}),
    "delete_topic": frozenset({"topic"}),
    "api_versions": frozenset({"keys"}),
}
CONSUMER_ACTIONS = frozenset({"cg_heartbeat", "await", "close"})
COMMON_OPTIONS = frozenset({"members", "wait", "expect", "version", "timeout_ms", "group"})
WAITS = ("answered", "parked", "none")
MEMBER_ACTIONS = frozenset({"join", "sync", "heartbeat", "leave", "await", "close", "cg_heartbeat"})


@dataclass(frozen=True)
class ConsumerSpec:
    """A KIP-848 member: its alias is its client-chosen member id (v1), and these are the
    values its joins (epoch 0) send unless the step says otherwise."""

    alias: str
    client_id: str
    group: str
    topics: tuple[str, ...] | None = ()
    regex: str | None = None
    instance_id: str | None = None
    rack_id: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    version: int | None = None


@dataclass(frozen=True)
class Step:
    action: str
    members: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wait(self) -> str:
        return str(self.options.get("wait", "answered"))

    def label(self) -> str:
        who = f" [{', '.join(self.members)}]" if self.members else ""
        extra = {k: v for k, v in self.options.items() if k not in ("members", "expect")}
        return f"{self.action}{who}" + (f" {_compact(extra)}" if extra else "")


def _compact(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(options.items()))


@dataclass(frozen=True)
class Scenario:
    name: str
    members: Mapping[str, MemberSpec]
    steps: tuple[Step, ...]
    group: str = "g"
    description: str = ""
    lesson: str = ""  # one sentence of what it teaches (``play --list``)
    topics: Mapping[str, int] = field(default_factory=dict)
    versions: Mapping[str, int] = field(default_factory=dict)  # API name -> preferred version
    initial_rebalance_delay_ms: int = 0  # what the broker under test is configured with
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms of the broker under test
    stagger_ms: int = 20  # gap between concurrent sends, so arrival order is the listed order
    settle_ms: int = 300  # how long "parked" waits before deciding nothing was answered
    timeout_ms: int = 15_000  # default wait for an answer
    unique_names: bool = True  # suffix group ids and topic names per run (real brokers keep old ones)
    consumers: Mapping[str, ConsumerSpec] = field(default_factory=dict)  # KIP-848 members' join defaults
    broker: Mapping[str, str] = field(default_factory=dict)  # broker properties the scenario needs
    requires: tuple[str, ...] = ()  # features the emulator must have to run it (e.g. "migration")
    flavors: tuple[str, ...] = ()  # broker lines ("4", "3") it is written for; empty: every one

    @property
    def uses_consumer_protocol(self) -> bool:
        return any(step.action in ("cg_heartbeat", "cg_describe") for step in self.steps)

    def validate(self) -> Scenario:
        for step in self.steps:
            _validate_step(self, step)
        return self


def _validate_step(scenario: Scenario, step: Step) -> None:
    allowed = ACTIONS.get(step.action)
    if allowed is None:
        raise ScenarioError(f"unknown action {step.action!r}; known: {', '.join(sorted(ACTIONS))}")
    unknown = set(step.options) - allowed - COMMON_OPTIONS
    if unknown:
        raise ScenarioError(f"{step.action}: unknown options {sorted(unknown)}")
    if step.wait not in WAITS:
        raise ScenarioError(f"{step.action}: wait must be one of {WAITS}, not {step.wait!r}")
    for alias in step.members:
        if alias not in scenario.members and not (step.action in CONSUMER_ACTIONS and alias in scenario.consumers):
            raise ScenarioError(f"{step.action}: unknown member {alias!r}")
    if step.action in MEMBER_ACTIONS and not step.members:
        raise ScenarioError(f"{step.action} needs at least one member")


def as_tuple(value: Any) -> tuple[str, ...]:
    """A member list written as one alias or a list of aliases."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(v) for v in value)
    raise ScenarioError(f"expected a member alias or a list of aliases, got {value!r}")
