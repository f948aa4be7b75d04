"""IncrementalAlterConfigs (44), v0-1, as Kafka 4.4.0 (and 3.9.2) answer it.

Preprocessing as ``ConfigAdminManager.preprocess`` does, per resource and in this order: a resource
named twice -> INVALID_REQUEST "Each resource must appear at most once." for both; a config named
twice -> "Error due to duplicate config keys"; a null value outside DELETE -> "Null value not
supported for : NAMES"; a broker resource must name this broker ("Unexpected broker id, ..."),
read-only broker configs -> "Cannot update these configs dynamically: [NAMES]"; an unknown resource
type -> "Unknown resource type N". Then ALTER_CONFIGS (topic, or cluster for brokers) is checked, and
KRaft's ``ConfigurationControlManager`` applies SET / DELETE / APPEND / SUBTRACT (lists only: "Can't
APPEND to key K because its type is not LIST.") and ``LogConfig.validate``s the result (INVALID_CONFIG
with ``ConfigException``'s messages). Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION "The topic 'T' does
not exist.". ``validate_only`` checks everything and changes nothing. Broker-logger levels are accepted
and kept for DescribeConfigs (the emulator logs nothing through them). AlterConfigs (33) shares all of
this (``alter_configs``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator
from functools import partial
from typing import Any

from rebalance_lab.coordinator import broker_configs, other_configs, topic_configs
from rebalance_lab.coordinator.config_values import LIST
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.config_resources import (
    BROKER,
    BROKER_LOGGER,
    TOPIC,
    authorization_error,
    message_of,
    node_id_of,
)
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, counted, released
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from rebalance_lab.security.acls import Operation

API_KEY = 44
Op = tuple[str, int, str | None]  # name, operation, value
Change = Callable[[], None]  # a resource's change, made after every resource is checked
_INCREMENTAL_OPS = range(4)  # SET, DELETE, APPEND, SUBTRACT


def preprocess(ctx: RequestContext, resource_type: int, name: str, ops: list[Op], incremental: bool) -> None:
    """The checks the receiving broker makes before the controller sees the resource."""
    if any(count > 1 for count in Counter(n for n, _, _ in ops).values()):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [n for n, op, value in ops if value is None and not (incremental and op == topic_configs.OP_DELETE)]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    if resource_type == BROKER:
        if name:
            node_id_of(name, ctx.broker.node_id, describe=False)
        unknown = [op for _, op, _ in ops if op not in _INCREMENTAL_OPS]
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {unknown[0]}")
        broker_configs.of(ctx.world).check({n: v for n, _, v in ops})
    elif resource_type != TOPIC and not (incremental and resource_type == BROKER_LOGGER):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


def _apply_topic(ctx: RequestContext, name: str, ops: list[Op], validate_only: bool, incremental: bool,
                 changes: list[Change]) -> None:
    cluster, flavor = ctx.world.cluster, ctx.world.config.flavor
    info = cluster.topics.get(name)
    base = dict(info.configs) if info is not None and incremental else {}
    new = topic_configs.incremental(base, ops, flavor)
    if info is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    topic_configs.check_all(new, flavor)
    if not validate_only:
        changes.append(partial(cluster.replace_configs, name, new))


def _apply_broker(ctx: RequestContext, name: str, ops: list[Op], validate_only: bool, incremental: bool,
                  changes: list[Change]) -> None:
    brokers = broker_configs.of(ctx.world)
    node_id = int(name) if name else None
    new = dict(brokers.current(node_id)) if incremental else {}
    for key, op, value in ops:
        if op == topic_configs.OP_DELETE:
            new.pop(key, None)
        elif op == topic_configs.OP_SET and value is not None:
            new[key] = value
        elif brokers.schema.get(key, {}).get("type") != LIST:
            kind = "APPEND" if op == topic_configs.OP_APPEND else "SUBTRACT"
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {kind} to key {key} because its type is not LIST.")
        else:
            current = new.get(key, brokers.schema[key]["value"]) or ""
            parts = [p for p in str(current).split(",") if p]
            items = (value or "").split(",")
            kept = parts + [i for i in items if i not in parts] if op == topic_configs.OP_APPEND \
                else [p for p in parts if p not in items]
            new[key] = ",".join(kept)
    if not validate_only:
        changes.append(partial(brokers.replace, node_id, new))


def _apply_loggers(ctx: RequestContext, name: str, ops: list[Op], validate_only: bool,
                   changes: list[Change]) -> None:
    """``RuntimeLoggerManager``: this broker's id, then SET a level or DELETE back to the root's."""
    node_id_of(name, ctx.broker.node_id, describe=False)
    if not validate_only:
        changes.append(partial(_set_levels, other_configs.logger_levels(ctx.world), ops))


def _set_levels(levels: dict[str, str], ops: list[Op]) -> None:
    for logger, op, value in ops:
        if op == topic_configs.OP_SET and value is not None:
            levels[logger] = value
        elif op == topic_configs.OP_DELETE:
            levels.pop(logger, None)


def alter_resource(ctx: RequestContext, resource_type: int, name: str, ops: list[Op], validate_only: bool,
                   incremental: bool, changes: list[Change]) -> tuple[ErrorCode, str | None]:
    """One resource's (error code, message); the change it makes, if any, is added to ``changes``."""
    try:
        preprocess(ctx, resource_type, name, ops, incremental)
        refused = authorization_error(ctx, Operation.ALTER_CONFIGS, resource_type, name)
        if refused is not None:
            return refused, None
        if resource_type == TOPIC:
            _apply_topic(ctx, name, ops, validate_only, incremental, changes)
        elif resource_type == BROKER:
            _apply_broker(ctx, name, ops, validate_only, incremental, changes)
        elif resource_type == BROKER_LOGGER:
            _apply_loggers(ctx, name, ops, validate_only, changes)
    except KafkaError as exc:
        return exc.code, message_of(exc)
    return ErrorCode.NONE, None


def alter_all(ctx: RequestContext, resources: list[tuple[int, str, list[Op]]], validate_only: bool,
              incremental: bool) -> Generator[None, None, list[tuple[int, str, ErrorCode, str | None]]]:
    """Every resource's answer, in request order: checked in steps, every change made in the last one.

    Each resource is checked against the configs as they were before the request, and the changes are made
    together, as KRaft's ``ConfigurationControlManager`` builds a request's records from one image and
    commits them as one batch (``ControllerResult.atomicOf``)."""
    counts = yield from counted((t, n) for t, n, _ in resources)
    answers: list[tuple[int, str, ErrorCode, str | None]] = []
    changes: list[Change] = []
    pacer = Pacer()
    for resource_type, name, ops in resources:
        yield from pacer.pause(1 + len(ops))
        message: str | None
        if counts[(resource_type, name)] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
        else:
            code, message = alter_resource(ctx, resource_type, name, ops, validate_only, incremental, changes)
        answers.append((resource_type, name, code, message))
    yield
    for change in changes:
        change()
    yield from released(counts, changes)
    return answers


def handle(ctx: RequestContext, request: Any) -> Any:
    return respond(ctx, API_KEY, request, lambda c: c.config_operation, incremental=True)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return respond_error(API_KEY, api_version, request, code)


def respond(ctx: RequestContext, api_key: int, request: Any, operation: Callable[[Any], int], incremental: bool) -> Any:
    """The answer of AlterConfigs (33: every config a SET) and IncrementalAlterConfigs (44): the same shape;
    a request of many resources is answered in steps (200,000 held the loop 12-22 s)."""
    resources = list(request.resources or ())
    return answer(_respond(ctx, api_key, request, resources, operation, incremental), len(resources))


def _respond(ctx: RequestContext, api_key: int, request: Any, resources: list[Any], operation: Callable[[Any], int],
             incremental: bool) -> Generator[None, None, Any]:
    pacer = Pacer()
    parsed = []
    for r in resources:
        yield from pacer.pause()
        parsed.append((r.resource_type, r.resource_name, [(c.name, operation(c), c.value) for c in r.configs]))
    answers = yield from alter_all(ctx, parsed, bool(request.validate_only), incremental=incremental)
    result = codec.response_type(api_key).AlterConfigsResourceResponse
    responses = []
    for t, n, code, message in answers:
        yield from pacer.pause()
        responses.append(result(error_code=code, error_message=message, resource_type=t, resource_name=n))
    yield from released(parsed, answers, resources)
    return codec.new_response(api_key, ctx.api_version, throttle_time_ms=0, responses=responses)


def respond_error(api_key: int, api_version: int, request: Any, code: ErrorCode) -> Any:
    result = codec.response_type(api_key).AlterConfigsResourceResponse
    responses = [result(error_code=code, error_message=None, resource_type=r.resource_type,
                        resource_name=r.resource_name) for r in request.resources]
    return codec.new_response(api_key, api_version, throttle_time_ms=0, responses=responses)
