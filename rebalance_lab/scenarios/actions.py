"""Each scenario action as the requests it sends (:class:`Outgoing`), one per sender."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rebalance_lab.clients.member.calls import LeaveGroupCall
from rebalance_lab.scenarios import requests as rq
from rebalance_lab.scenarios.context import RunContext
from rebalance_lab.scenarios.loader import partition_list, protocol_from_value
from rebalance_lab.scenarios.model import ScenarioError, Step

ADMIN = "admin"


@dataclass(frozen=True)
class Outgoing:
    who: str  # member alias, or "admin"
    api: str
    group_id: str  # routes the request to this group's coordinator
    client_id: str
    build: Callable[[int], Any]  # version -> request body
    version: int | None = None  # explicit version from the step
    connection: str = "main"
    on_response: Callable[[Any], None] | None = None
    sort_topics: bool = False


def _explicit_version(step: Step) -> int | None:
    value = step.options.get("version")
    return None if value is None else int(value)


def _member_outgoing(ctx: RunContext, step: Step, alias: str, api: str, build: Callable[[int], Any],
                     on_response: Callable[[Any], None] | None = None) -> Outgoing:
    opts = dict(step.options)
    return Outgoing(alias, api, ctx.member_group(alias, opts), ctx.member(alias).client_id, build,
                    _explicit_version(step), str(opts.get("connection", "main")), on_response)


def join(ctx: RunContext, step: Step) -> list[Outgoing]:
    return [_join_one(ctx, step, alias) for alias in step.members]


def _join_one(ctx: RunContext, step: Step, alias: str) -> Outgoing:
    spec, opts = ctx.member(alias), dict(step.options)
    group_id = ctx.member_group(alias, opts)
    protocols = spec.protocols
    if "protocols" in opts:
        topics = protocols[0].topics if protocols else ()
        protocols = tuple(protocol_from_value(p, topics) for p in opts["protocols"] or ())
    encoded = tuple((p.name, rq.protocol_metadata(p, ctx.topic)) for p in protocols)
    member_id, instance = ctx.member_id(alias, opts), ctx.instance_id(alias, opts)

    def build(version: int) -> Any:
        return rq.join(
            group_id, version, member_id=member_id, instance_id=instance,
            protocol_type=str(opts.get("protocol_type", spec.protocol_type)), protocols=encoded,
            session_timeout_ms=int(opts.get("session_timeout_ms", spec.session_timeout_ms)),
            rebalance_timeout_ms=int(opts.get("rebalance_timeout_ms", spec.rebalance_timeout_ms)),
            reason=opts.get("reason"),
        )

    out = _member_outgoing(ctx, step, alias, "JoinGroup", build, lambda r: ctx.learn_join(alias, group_id, r))
    if out.version is None and spec.join_version is not None:
        out = dataclasses.replace(out, version=spec.join_version)
    return out


def sync(ctx: RunContext, step: Step) -> list[Outgoing]:
    return [_sync_one(ctx, step, alias) for alias in step.members]


def _sync_one(ctx: RunContext, step: Step, alias: str) -> Outgoing:
    spec, opts = ctx.member(alias), dict(step.options)
    group_id = ctx.member_group(alias, opts)
    generation, member_id = ctx.generation(alias, opts), ctx.member_id(alias, opts)
    instance = ctx.instance_id(alias, opts)
    assignments: tuple[tuple[str, bytes], ...] = ()
    # the assignment map is sent by the leader (or by the only member named in the step)
    if "assignments" in opts and (len(step.members) == 1 or ctx.is_leader(alias, group_id)):
        assignments = _assignments(ctx, opts["assignments"] or {})
    protocol_type = opts.get("protocol_type", spec.protocol_type)
    protocol_name = opts.get("protocol_name", ctx.protocol_names.get(alias))

    def build(version: int) -> Any:
        return rq.sync(group_id, version, generation=generation, member_id=member_id, instance_id=instance,
                       protocol_type=protocol_type, protocol_name=protocol_name, assignments=assignments)

    return _member_outgoing(ctx, step, alias, "SyncGroup", build)


def _assignments(ctx: RunContext, value: Mapping[str, Any]) -> tuple[tuple[str, bytes], ...]:
    """Keys are member aliases (their current ids) or literal member ids."""
    out = []
    for key, assignment in value.items():
        member_id = ctx.identities.current.get(key, "") if key in ctx.scenario.members else ctx.resolve_id(key)
        out.append((member_id, rq.assignment_bytes(assignment, ctx.topic)))
    return tuple(out)


def heartbeat(ctx: RunContext, step: Step) -> list[Outgoing]:
    out = []
    for alias in step.members:
        opts = dict(step.options)
        generation, member_id = ctx.generation(alias, opts), ctx.member_id(alias, opts)
        group_id, instance = ctx.member_group(alias, opts), ctx.instance_id(alias, opts)

        def build(version: int, g: str = group_id, gen: int = generation, m: str = member_id,
                  i: str | None = instance) -> Any:
            return rq.heartbeat(g, version, generation=gen, member_id=m, instance_id=i)

        out.append(_member_outgoing(ctx, step, alias, "Heartbeat", build))
    return out


def leave(ctx: RunContext, step: Step) -> list[Outgoing]:
    out = []
    for alias in step.members:
        opts = dict(step.options)
        identity = LeaveGroupCall(ctx.member_id(alias, opts), ctx.instance_id(alias, opts), opts.get("reason"))
        group_id = ctx.member_group(alias, opts)

        def build(version: int, g: str = group_id, x: LeaveGroupCall = identity) -> Any:
            return rq.leave(g, version, [x])

        out.append(_member_outgoing(ctx, step, alias, "LeaveGroup", build))
    return out


def leave_batch(ctx: RunContext, step: Step) -> list[Outgoing]:
    identities = [_identity(ctx, item) for item in step.options.get("identities") or ()]
    group_id = ctx.group_id(step.options.get("group"))
    return [Outgoing(ADMIN, "LeaveGroup", group_id, ADMIN, lambda v: rq.leave(group_id, v, identities),
                     _explicit_version(step))]


def _identity(ctx: RunContext, item: Any) -> LeaveGroupCall:
    """``a`` | ``{alias: a, member_id: "", instance_id: x, reason: r}`` | ``{member_id: x}``."""
    if isinstance(item, str):
        return LeaveGroupCall(ctx.member_id(item, {}), ctx.instance_id(item, {}))
    if not isinstance(item, Mapping):
        raise ScenarioError(f"a leave identity is an alias or a mapping, not {item!r}")
    opts = dict(item)
    alias = opts.get("alias")
    if alias is not None:
        return LeaveGroupCall(ctx.member_id(alias, opts), ctx.instance_id(alias, opts), opts.get("reason"))
    instance = opts.get("instance_id")
    return LeaveGroupCall(ctx.resolve_id(opts.get("member_id", "")), None if instance is None else str(instance),
                          opts.get("reason"))


def commit(ctx: RunContext, step: Step) -> list[Outgoing]:
    opts = dict(step.options)
    offsets = [(ctx.topic(t), p, o) for t, p, o in _offsets(opts.get("offsets") or {})]
    metadata = opts.get("metadata")
    if step.members:
        alias = step.members[0]
        generation, member_id = ctx.generation(alias, opts), ctx.member_id(alias, opts)
        instance, who, group_id = ctx.instance_id(alias, opts), alias, ctx.member_group(alias, opts)
        client_id = ctx.member(alias).client_id
    else:  # a "simple" commit: no member, no generation (spec coordinator.md §12.1 rule 4)
        generation, member_id = int(opts.get("generation", -1)), ctx.resolve_id(opts.get("member_id", ""))
        instance, who, group_id, client_id = opts.get("instance_id"), ADMIN, ctx.group_id(opts.get("group")), ADMIN

    def build(version: int) -> Any:
        return rq.commit(group_id, version, generation=generation, member_id=member_id, instance_id=instance,
                         offsets=offsets, metadata=metadata)

    # sort_topics: the Scala coordinator answers in hash-map order, which depends on the
    # (per-run) topic names, so the transcript compares partitions as a set
    return [Outgoing(who, "OffsetCommit", group_id, client_id, build, _explicit_version(step),
                     str(opts.get("connection", "main")), sort_topics=True)]


def _offsets(value: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """``{t: {0: 10, 1: 20}}`` -> [(t, 0, 10), (t, 1, 20)]."""
    out: list[tuple[str, int, int]] = []
    for topic, partitions in value.items():
        if not isinstance(partitions, Mapping):
            raise ScenarioError(f"offsets for {topic!r} must map partition -> offset")
        out.extend((str(topic), int(p), int(o)) for p, o in partitions.items())
    return out


def fetch(ctx: RunContext, step: Step) -> list[Outgoing]:
    opts = dict(step.options)
    raw_topics = opts.get("topics")
    topics = None if raw_topics is None else {ctx.topic(t): ps for t, ps in _topic_partitions(raw_topics).items()}
    who = step.members[0] if step.members else ADMIN
    group_id = ctx.member_group(who, opts) if step.members else ctx.group_id(opts.get("group"))
    client_id = ctx.member(who).client_id if step.members else ADMIN
    stable = bool(opts.get("require_stable", False))
    # v9+: a consumer-protocol member's id and epoch (KIP-848); absent = an admin fetch
    member = (None if opts.get("member_id") is None else ctx.resolve_id(opts["member_id"]),
              int(opts.get("member_epoch", -1)))
    return [Outgoing(who, "OffsetFetch", group_id, client_id, lambda v: rq.fetch(group_id, v, topics, stable, member),
                     _explicit_version(step), str(opts.get("connection", "main")), sort_topics=topics is None)]


def _topic_partitions(value: Mapping[str, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in partition_list(value):
        out.setdefault(topic, []).append(partition)
    return out


def _groups(ctx: RunContext, step: Step) -> list[str]:
    value = step.options.get("groups", [ctx.scenario.group])
    names = [value] if isinstance(value, str) else list(value)
    return [ctx.group_id(str(n)) for n in names]


def describe(ctx: RunContext, step: Step) -> list[Outgoing]:
    groups = _groups(ctx, step)
    include = bool(step.options.get("include_authorized_operations", False))
    return [Outgoing(ADMIN, "DescribeGroups", ctx.group_id(None), ADMIN, lambda v: rq.describe(v, groups, include),
                     _explicit_version(step))]


def list_groups(ctx: RunContext, step: Step) -> list[Outgoing]:
    states = [str(s) for s in step.options.get("states") or ()]
    types = [str(t) for t in step.options.get("types") or ()]
    return [Outgoing(ADMIN, "ListGroups", ctx.group_id(None), ADMIN, lambda v: rq.list_groups(v, states, types),
                     _explicit_version(step))]


def delete(ctx: RunContext, step: Step) -> list[Outgoing]:
    groups = _groups(ctx, step)
    return [Outgoing(ADMIN, "DeleteGroups", ctx.group_id(None), ADMIN, lambda v: rq.delete_groups(v, groups),
                     _explicit_version(step))]


def find_coordinator(ctx: RunContext, step: Step) -> list[Outgoing]:
    raw_keys = step.options.get("keys", [step.options.get("key", ctx.scenario.group)])
    keys = [ctx.group_id(str(k)) for k in ([raw_keys] if isinstance(raw_keys, str) else raw_keys)]
    key_type = int(step.options.get("key_type", 0))
    return [Outgoing(ADMIN, "FindCoordinator", ctx.group_id(None), ADMIN,
                     lambda v: rq.find_coordinator(v, keys, key_type), _explicit_version(step), connection="find")]


BUILDERS: dict[str, Callable[[RunContext, Step], list[Outgoing]]] = {
    "join": join, "sync": sync, "heartbeat": heartbeat, "leave": leave, "leave_batch": leave_batch,
    "commit": commit, "fetch": fetch, "describe": describe, "list": list_groups, "delete": delete,
    "find_coordinator": find_coordinator,
}
