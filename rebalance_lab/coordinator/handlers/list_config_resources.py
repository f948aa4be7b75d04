"""ListConfigResources (74), v0-1, as Kafka 4.4.0 answers it (KIP-1142; v0 is 3.x's ListClientMetricsResources).

DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED. v0 lists client-metrics
subscriptions only; v1 the resources of the types asked (empty: every type): the broker logger and the
broker (this broker's id), every topic; groups with group configs and client-metrics subscriptions,
which the emulator does not hold, are never listed. A type outside TOPIC (2), BROKER (4),
BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32) -> UNSUPPORTED_VERSION with no resources.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 74
_RESPONSE = codec.response_type(API_KEY)
_RESOURCE = _RESPONSE.ConfigResource
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_SUPPORTED = {TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP}


def _resources(ctx: RequestContext, types: set[int]) -> list[Any]:
    node = str(ctx.broker.node_id)
    found = [_RESOURCE(resource_name=node, resource_type=t) for t in (BROKER_LOGGER, BROKER) if t in types]
    if TOPIC in types:
        found += [_RESOURCE(resource_name=name, resource_type=TOPIC) for name in ctx.world.cluster.topics]
    return found


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits_cluster(ctx, authz.DESCRIBE_CONFIGS):
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    asked = {CLIENT_METRICS} if ctx.api_version == 0 else set(request.resource_types or _SUPPORTED)
    if asked - _SUPPORTED:
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              config_resources=_resources(ctx, asked))


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code, config_resources=[])
