"""The KIP-848 actions as requests: ``cg_heartbeat`` (ConsumerGroupHeartbeat, 68) and
``cg_describe`` (ConsumerGroupDescribe, 69).

A heartbeat sends only what the step (or, on a join, the member's declared defaults)
gives; every other optional field is null / -1, which the coordinator reads as
"unchanged" (spec kip848.md §1.2). A join (epoch 0) is a full request: rebalance
timeout, subscription and an empty owned list unless the step overrides them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from rebalance_lab.scenarios import requests as rq
from rebalance_lab.scenarios.actions import ADMIN, Outgoing
from rebalance_lab.scenarios.consumer_model import epoch_value
from rebalance_lab.scenarios.context import Owned, RunContext
from rebalance_lab.scenarios.model import ConsumerSpec, ScenarioError, Step

_ABSENT = object()


def cg_heartbeat(ctx: RunContext, step: Step) -> list[Outgoing]:
    return [_heartbeat_one(ctx, step, alias) for alias in step.members]


def _heartbeat_one(ctx: RunContext, step: Step, alias: str) -> Outgoing:
    spec, opts = ctx.scenario.consumers[alias], dict(step.options)
    epoch = epoch_value(opts.get("epoch"), ctx.consumers.epochs.get(alias, 0))
    group_id = ctx.group_id(opts.get("group", spec.group))
    fields = _fields(ctx, spec, opts, epoch, alias)
    explicit = opts.get("member_id", _ABSENT)

    def build(version: int) -> Any:
        member_id = _member_id(ctx, alias, explicit, version)
        return rq.consumer_heartbeat(version, group_id=group_id, member_id=member_id, member_epoch=epoch, **fields)

    version = opts.get("version", spec.version)
    return Outgoing(alias, "ConsumerGroupHeartbeat", group_id, spec.client_id, build,
                    None if version is None else int(version), str(opts.get("connection", "main")),
                    lambda response: _learn(ctx, alias, response))


def _fields(ctx: RunContext, spec: ConsumerSpec, opts: dict[str, Any], epoch: int, alias: str) -> dict[str, Any]:
    """The optional fields: the step's values, else a join's defaults, else null / -1."""
    joining, leaving = epoch == 0, epoch in (-1, -2)
    regex = opts.get("regex", spec.regex if joining else None)
    if "topics" in opts:
        topics = opts["topics"]
    elif joining:
        topics = spec.topics if spec.topics is not None or regex is not None else []
    else:
        topics = None
    return {
        "instance_id": _pick(opts, "instance_id", spec.instance_id if joining or leaving else None),
        "rack_id": _pick(opts, "rack_id", spec.rack_id if joining else None),
        "rebalance_timeout_ms": int(opts.get("rebalance_timeout_ms", spec.rebalance_timeout_ms if joining else -1)),
        "subscribed_topic_names": None if topics is None else [ctx.topic(str(t)) for t in topics],
        "subscribed_topic_regex": None if regex is None else str(regex) + ctx.suffix,
        "server_assignor": _pick(opts, "server_assignor", spec.server_assignor if joining else None),
        "topic_partitions": _owned(ctx, alias, opts.get("owned", [] if joining else None)),
    }


def _pick(opts: Mapping[str, Any], key: str, default: str | None) -> str | None:
    value = opts.get(key, default)
    return None if value is None else str(value)


def _owned(ctx: RunContext, alias: str, value: Any) -> Owned | None:
    """``null`` | ``assigned`` (the member's last Assignment) | ``{topic: [partitions]}`` | ``[]``."""
    if value is None:
        return None
    if value == "assigned":
        return [(t, list(ps)) for t, ps in ctx.consumers.assigned.get(alias, [])]
    if isinstance(value, list) and not value:
        return []
    if not isinstance(value, Mapping):
        raise ScenarioError(f"owned must be null, assigned, [] or {{topic: [partitions]}}, not {value!r}")
    out: Owned = []
    for topic, partitions in value.items():
        topic_id = ctx.topic_ids.get(str(topic))
        if topic_id is None:
            raise ScenarioError(f"owned: no topic id known for {topic!r} (not in Metadata)")
        out.append((topic_id, [int(p) for p in partitions or ()]))
    return out


def _member_id(ctx: RunContext, alias: str, explicit: Any, version: int) -> str:
    """The step's ``member_id`` (``@B`` = B's id), else the id the member has, else its alias
    (v1: the client chooses, KIP-1082) or ``""`` (v0: the coordinator makes one)."""
    if explicit is not _ABSENT:
        text = "" if explicit is None else str(explicit)
        if text.startswith("@") and text[1:] in ctx.consumers.ids:
            return ctx.consumers.ids[text[1:]]
        ctx.identities.literal(text)
        return text
    member_id = ctx.consumers.ids.get(alias, alias if version >= 1 else "")
    if member_id == alias:
        ctx.identities.literal(member_id)
    return member_id


def _learn(ctx: RunContext, alias: str, response: Any) -> None:
    """A successful answer gives the member its id (v0: made by the coordinator), its epoch
    and, when present, its new assignment."""
    if response.error_code != 0:
        return
    member_id = str(response.member_id or "")
    if member_id and member_id != alias and member_id not in ctx.identities.labels:
        ctx.identities.learn(alias, member_id)
    if member_id:
        ctx.consumers.ids[alias] = member_id
    ctx.consumers.epochs[alias] = int(response.member_epoch)
    if response.assignment is not None:
        ctx.consumers.assigned[alias] = [(uuid.UUID(str(tp.topic_id)), list(tp.partitions))
                                         for tp in response.assignment.topic_partitions]


def cg_describe(ctx: RunContext, step: Step) -> list[Outgoing]:
    value = step.options.get("groups", [ctx.scenario.group])
    groups = [ctx.group_id(str(n)) for n in ([value] if isinstance(value, str) else value)]
    include = bool(step.options.get("include_authorized_operations", False))
    version = step.options.get("version")
    return [Outgoing(ADMIN, "ConsumerGroupDescribe", ctx.group_id(None), ADMIN,
                     lambda v: rq.consumer_describe(v, groups, include), None if version is None else int(version))]


BUILDERS = {"cg_heartbeat": cg_heartbeat, "cg_describe": cg_describe}
