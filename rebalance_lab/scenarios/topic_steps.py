"""Steps that change or read cluster metadata: ``create_topic``, ``create_partitions``,
``delete_topic`` and ``api_versions``, and the topic ids KIP-848 heartbeats carry.

A metadata change is followed by Metadata requests until the broker shows it (the
group coordinator learns it from the same metadata image), so the next step sees the
new topic ids and partition counts. Only the error code (and message) of a change is
recorded: the rest of a CreateTopics answer (configs, replication) is not the group
coordinator's business.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rebalance_lab.clients.member import wire
from rebalance_lab.scenarios import requests as rq
from rebalance_lab.scenarios.actions import ADMIN
from rebalance_lab.scenarios.context import RunContext
from rebalance_lab.scenarios.model import Step
from rebalance_lab.scenarios.normalise import error_name
from rebalance_lab.scenarios.session import Session
from rebalance_lab.scenarios.transcript import Entry

_ATTEMPTS, _PAUSE_S = 100, 0.1
_ZERO = uuid.UUID(int=0)
TopicCheck = Callable[[Any], bool]  # a Metadata response topic -> "the change is visible"


async def refresh_topic_ids(session: Session, ctx: RunContext, names: Iterable[str],
                            check: TopicCheck | None = None) -> dict[uuid.UUID, int]:
    """Learn the ids of ``names`` (scenario names) from Metadata, waiting until ``check``
    holds for every one of them (default: the topic exists with partitions); the partition
    count of each existing one, by id."""
    wanted = {ctx.topic(n): n for n in names}
    counts: dict[uuid.UUID, int] = {}
    if not wanted:
        return counts
    conn = await session.bootstrap_connection()
    version = session.version(conn, "Metadata")
    ready = check or (lambda t: t.error_code == 0 and bool(t.partitions))
    for _ in range(_ATTEMPTS):
        response = await conn.request(wire.metadata_request(list(wanted), version))
        counts.clear()
        for topic in response.topics:
            topic_id = getattr(topic, "topic_id", None)
            if topic.error_code == 0 and topic_id not in (None, _ZERO) and topic.name in wanted:
                ctx.topic_ids[wanted[topic.name]] = counted = uuid.UUID(str(topic_id))
                counts[counted] = len(topic.partitions)
        if all(ready(t) for t in response.topics):
            break
        await asyncio.sleep(_PAUSE_S)
    await _wait_for_group_coordinator(session, ctx, wanted, counts)
    return counts


async def _wait_for_group_coordinator(session: Session, ctx: RunContext, wanted: Mapping[str, str],
                                      counts: Mapping[uuid.UUID, int]) -> None:
    """The group coordinator learns a metadata change a little after Metadata shows it (its
    image is published to it asynchronously), and a KIP-848 join subscribing to a topic it
    does not know yet gets nothing for it. A throw-away consumer group subscribing to the
    topics shows when it knows them: its join gets exactly the partitions Metadata lists."""
    if not ctx.scenario.uses_consumer_protocol:
        return
    expected = {(topic_id, p) for topic_id, count in counts.items() for p in range(count)}
    for attempt in range(_ATTEMPTS):
        group_id = f"probe{ctx.suffix}-{len(ctx.topic_ids)}-{attempt}"
        conn = await session.connection(ADMIN, group_id, ADMIN, "probe")
        if rq.API_KEYS["ConsumerGroupHeartbeat"] not in conn.api_versions:
            return
        version = session.version(conn, "ConsumerGroupHeartbeat")
        join = rq.consumer_heartbeat(version, group_id=group_id, member_id="probe", member_epoch=0, instance_id=None,
                                     rack_id=None, rebalance_timeout_ms=1000, subscribed_topic_names=list(wanted),
                                     subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
        response = await conn.request(join)
        if response.error_code != 0:
            return  # e.g. a 3.9 broker, whose consumer protocol is off by default
        got = {(tp.topic_id, p) for tp in (response.assignment.topic_partitions if response.assignment else ())
               for p in tp.partitions}
        leave_id = str(response.member_id or "probe")
        await conn.request(rq.consumer_heartbeat(version, group_id=group_id, member_id=leave_id, member_epoch=-1,
                                                 instance_id=None, rack_id=None, rebalance_timeout_ms=-1,
                                                 subscribed_topic_names=None, subscribed_topic_regex=None,
                                                 server_assignor=None, topic_partitions=None))
        if got == expected:
            return
        await asyncio.sleep(_PAUSE_S / 2)


def _entry(api: str, version: int, results: Iterable[Any], ctx: RunContext) -> Entry:
    topics = {actual: name for name, actual in ctx.topics.items()}
    rows = [{"name": topics.get(str(r.name), r.name), "error_code": error_name(int(r.error_code)),
             "error_message": _message(r, ctx.suffix)} for r in results]
    return Entry(ADMIN, api, version, fields={"topics": rows})


def _message(result: Any, suffix: str) -> Any:
    message = getattr(result, "error_message", None)
    return message.replace(suffix, "") if isinstance(message, str) and suffix else message


async def create_topic(session: Session, ctx: RunContext, step: Step) -> Entry:
    name, count = str(step.options["topic"]), int(step.options.get("partitions", 1))
    conn = await session.bootstrap_connection()
    version = session.version(conn, "CreateTopics", _version(step))
    response = await conn.request(rq.create_topics(version, {ctx.topic(name): count}))
    await refresh_topic_ids(session, ctx, [name], lambda t: t.error_code == 0 and len(t.partitions) == count)
    return _entry("CreateTopics", version, response.topics, ctx)


async def create_partitions(session: Session, ctx: RunContext, step: Step) -> Entry:
    name, count = str(step.options["topic"]), int(step.options["count"])
    conn = await session.bootstrap_connection()
    version = session.version(conn, "CreatePartitions", _version(step))
    response = await conn.request(rq.create_partitions(version, ctx.topic(name), count))
    await refresh_topic_ids(session, ctx, [name], lambda t: t.error_code == 0 and len(t.partitions) == count)
    return _entry("CreatePartitions", version, response.results, ctx)


async def delete_topic(session: Session, ctx: RunContext, step: Step) -> Entry:
    name = str(step.options["topic"])
    conn = await session.bootstrap_connection()
    version = session.version(conn, "DeleteTopics", _version(step))
    response = await conn.request(rq.delete_topics(version, ctx.topic(name)))
    await refresh_topic_ids(session, ctx, [name], lambda t: t.error_code != 0)  # gone from Metadata
    return _entry("DeleteTopics", version, response.responses, ctx)


async def api_versions(session: Session, ctx: RunContext, step: Step) -> Entry:
    """The coordinator's ApiVersions ranges for ``keys`` (all keys when not given), each
    ``[min, max]`` or ``not advertised``."""
    conn = await session.connection(ADMIN, ctx.group_id(None), ADMIN, "versions")
    keys = step.options.get("keys") or sorted(conn.api_versions)
    ranges = {int(k): list(conn.api_versions[int(k)]) if int(k) in conn.api_versions else "not advertised"
              for k in keys}
    return Entry(ADMIN, "ApiVersions", 3, fields={"api_keys": ranges})


def _version(step: Step) -> int | None:
    value = step.options.get("version")
    return None if value is None else int(value)


STEPS = {"create_topic": create_topic, "create_partitions": create_partitions, "delete_topic": delete_topic,
         "api_versions": api_versions}
