"""KIP-848 members of a scenario: their join defaults, and what a ``cg_heartbeat`` step sends.

A consumer-protocol member is named by an alias that is also its member id: from
ConsumerGroupHeartbeat v1 the client chooses its id (KIP-1082), so ``A`` is sent as
``A`` and the transcript shows ``A``. A v0 join with ``member_id: ""`` lets the
coordinator make the id; the transcript shows it as ``<alias>``.

Members need no declaration; a ``consumers:`` entry gives the values the member's
joins (epoch 0) send when the step does not say (``topics``, ``regex``,
``instance_id``, ``rack_id``, ``server_assignor``, ``rebalance_timeout_ms``,
``client_id``, ``version``). ``instance_id`` is also sent on leaves (epoch -1/-2), as
a static member must.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rebalance_lab.scenarios.model import ConsumerSpec, ScenarioError, Step

_CONSUMER_KEYS = frozenset({"topics", "regex", "instance_id", "rack_id", "server_assignor", "rebalance_timeout_ms",
                            "client_id", "group", "version"})
# ``epoch:`` words (ConsumerGroupHeartbeatRequest.MemberEpoch, spec kip848.md §1.2)
EPOCH_WORDS = {"join": 0, "leave": -1, "static-leave": -2}
JOIN_REBALANCE_TIMEOUT_MS = 300_000  # what the Java consumer sends by default (max.poll.interval.ms)


def consumers_from_dict(raw: Mapping[str, Any], steps: Sequence[Step], group: str) -> dict[str, ConsumerSpec]:
    """The declared consumers, plus a default one for every alias a ``cg_heartbeat`` names."""
    out = {str(alias): consumer_from_dict(str(alias), spec or {}, group) for alias, spec in raw.items()}
    for step in steps:
        if step.action == "cg_heartbeat":
            for alias in step.members:
                out.setdefault(alias, ConsumerSpec(alias=alias, client_id=alias, group=group))
    return out


def consumer_from_dict(alias: str, spec: Mapping[str, Any], default_group: str) -> ConsumerSpec:
    unknown = set(spec) - _CONSUMER_KEYS
    if unknown:
        raise ScenarioError(f"consumer {alias}: unknown keys {sorted(unknown)}")
    topics = spec.get("topics", ())
    return ConsumerSpec(
        alias=alias,
        client_id=str(spec.get("client_id", alias)),
        group=str(spec.get("group", default_group)),
        topics=None if topics is None else tuple(str(t) for t in topics),
        regex=_optional(spec.get("regex")),
        instance_id=_optional(spec.get("instance_id")),
        rack_id=_optional(spec.get("rack_id")),
        server_assignor=_optional(spec.get("server_assignor")),
        rebalance_timeout_ms=int(spec.get("rebalance_timeout_ms", JOIN_REBALANCE_TIMEOUT_MS)),
        version=None if spec.get("version") is None else int(spec["version"]),
    )


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


def epoch_value(value: Any, current: int) -> int:
    """``join`` 0, ``leave`` -1, ``static-leave`` -2, ``current`` (or absent) the member's
    last epoch, ``"+1"``/``"-1"`` relative to it, or an int."""
    if value is None or value == "current":
        return current
    if isinstance(value, str):
        if value in EPOCH_WORDS:
            return EPOCH_WORDS[value]
        if value[:1] in "+-":
            return current + int(value)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"epoch: join, leave, static-leave, current, +N/-N or an int, not {value!r}") from exc
