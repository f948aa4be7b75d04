"""DescribeConfigs (32), v1-4, as ``ConfigHelper.describeConfigs`` answers on Kafka 4.4.0 and 3.9.2.

* topic: every topic config with its value, source (TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, ...,
  DEFAULT_CONFIG), type (v3+) and, when asked, synonyms (``topic_configs.describe``); unknown ->
  UNKNOWN_TOPIC_OR_PARTITION, an illegal name -> INVALID_TOPIC_EXCEPTION with ``Topic.validate``'s message;
* broker "<id>": every broker config (``broker_configs``); "" the cluster-wide dynamic configs;
  another id -> INVALID_REQUEST; group (4.x), broker logger and client metrics: ``other_configs``; a type
  Kafka does not know fails the whole request (INVALID_REQUEST for every resource);
* configuration_keys (null or empty: all) filters by name; names that do not exist are left out;
* documentation (v3+) is null: Kafka's doc strings are not copied (FIDELITY.md);
* a successful result carries the error message "" (the generated default), as Kafka's does.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import broker_configs, other_configs, topic_configs
from rebalance_lab.coordinator.cluster import validate_topic_name
from rebalance_lab.coordinator.config_values import ConfigEntry
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.config_resources import (
    AUTHORIZATION_MESSAGES,
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    GROUP,
    TOPIC,
    authorization_error,
)
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 32
_RESPONSE = codec.response_type(API_KEY)
_RESULT = _RESPONSE.DescribeConfigsResult
_CONFIG = _RESULT.DescribeConfigsResourceResult
_SYNONYM = _CONFIG.DescribeConfigsSynonym
INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client library or "
                           "the message was sent to an incompatible broker. See the broker logs for more details.")


def _broker_id(ctx: RequestContext, name: str, logger: bool) -> int:
    if logger and not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        node_id = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if node_id != ctx.broker.node_id:
        tail = "" if logger else " or empty string,"
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {ctx.broker.node_id}{tail} but received {name}")
    return node_id


def _entries(ctx: RequestContext, resource: Any, include_synonyms: bool) -> list[ConfigEntry]:
    world, name, kind = ctx.world, resource.resource_name, resource.resource_type
    brokers = broker_configs.of(world)
    if kind == TOPIC:
        validate_topic_name(name)
        info = world.cluster.topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        return topic_configs.describe(info.configs, world.config.flavor, brokers, ctx.broker.node_id,
                                      include_synonyms)
    if kind == BROKER:
        if not name:
            return brokers.describe_cluster_defaults(include_synonyms)
        info_ = ctx.broker.info
        return brokers.describe(_broker_id(ctx, name, logger=False), f"{info_.host}:{info_.port}", include_synonyms)
    if kind == BROKER_LOGGER:
        _broker_id(ctx, name, logger=True)
        return other_configs.describe_loggers(world)
    if not name:
        what = "Group name" if kind == GROUP else "Client metrics subscription name"
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{what} must not be empty")
    if kind == GROUP:
        return other_configs.describe_group(world.config, include_synonyms)
    return other_configs.describe_client_metrics() if world.config.flavor == Flavor.KAFKA_4 else []  # 3.9.2: none


def _config(entry: ConfigEntry) -> Any:
    return _CONFIG(name=entry.name, value=entry.value, read_only=entry.read_only, config_source=entry.source,
                   is_sensitive=entry.sensitive, config_type=entry.config_type, documentation=None,
                   synonyms=[_SYNONYM(name=n, value=v, source=s) for n, v, s in entry.synonyms])


def _result(ctx: RequestContext, resource: Any, include_synonyms: bool) -> Any:
    def failed(code: ErrorCode, message: str | None) -> Any:
        return _RESULT(error_code=code, error_message=message, resource_type=resource.resource_type,
                       resource_name=resource.resource_name, configs=[])

    refused = authorization_error(ctx, authz.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name)
    if refused is not None:
        return failed(refused, AUTHORIZATION_MESSAGES[refused])
    try:
        entries = _entries(ctx, resource, include_synonyms)
    except KafkaError as exc:
        return failed(exc.code, str(exc) if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else "")
    keys = resource.configuration_keys
    wanted = [e for e in entries if not keys or e.name in keys]
    return _RESULT(error_code=ErrorCode.NONE, error_message="", resource_type=resource.resource_type,
                   resource_name=resource.resource_name, configs=[_config(e) for e in wanted])


def _known_types(ctx: RequestContext) -> set[int]:
    known = {TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS}
    return known | {GROUP} if ctx.world.config.flavor == Flavor.KAFKA_4 else known


def handle(ctx: RequestContext, request: Any) -> Any:
    known = _known_types(ctx)
    if any(r.resource_type not in known for r in request.resources):
        # an unknown type fails the authorization step, so the whole request (ConfigHelper): every result
        # INVALID_REQUEST with the error's default message
        results = [_RESULT(error_code=ErrorCode.INVALID_REQUEST, error_message=INVALID_REQUEST_MESSAGE,
                           resource_type=r.resource_type, resource_name=r.resource_name, configs=[])
                   for r in request.resources]
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=results)
    return answer(_answer(ctx, request), len(request.resources))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    # Each resource is described on its own (ConfigHelper.describeConfigs: no snapshot across them), so the
    # loop may serve others between resources: 200,000 resources in one go held it ~1.4 s. A described
    # topic (~40 configs) weighs more than an unknown name.
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    results, pacer = [], Pacer()
    for r in request.resources:
        result = _result(ctx, r, include_synonyms)
        results.append(result)
        yield from pacer.pause(1 + len(result.configs) // 4)
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    results = [_RESULT(error_code=code, error_message=None, resource_type=r.resource_type,
                       resource_name=r.resource_name, configs=[]) for r in request.resources]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, results=results)
