"""DescribeCluster (60), v0-2, as ``KafkaApis.handleDescribeCluster`` answers on a Kafka 4.4.0 broker.

The live brokers with the address of the listener the request came in on (v2 with
``include_fenced_brokers``: the fenced ones too, ``is_fenced``), the cluster id, the controller id
(a KRaft broker names a live broker; the emulator the lowest, as in Metadata), and the cluster's
authorized operations when asked (else Integer.MIN_VALUE). v1+ ``endpoint_type``: 1 (BROKER) is
served; 2 (CONTROLLER) -> MISMATCHED_ENDPOINT_TYPE, any other -> UNSUPPORTED_ENDPOINT_TYPE, with
Kafka's messages and an empty answer.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.acls import CLUSTER_NAME
from rebalance_lab.security.additional import advertised

API_KEY = 60
_RESPONSE = codec.response_type(API_KEY)
_BROKER = _RESPONSE.DescribeClusterBroker
_BROKER_ENDPOINT, _CONTROLLER_ENDPOINT = 1, 2
MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE = 114, 115


def _endpoint_error(endpoint_type: int) -> tuple[int, str] | None:
    if endpoint_type == _BROKER_ENDPOINT:
        return None
    if endpoint_type == _CONTROLLER_ENDPOINT:
        return MISMATCHED_ENDPOINT_TYPE, ("The request was sent to an endpoint of type BROKER, but we wanted an "
                                          "endpoint of type CONTROLLER")
    return UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"


def handle(ctx: RequestContext, request: Any) -> Any:
    endpoint_type = getattr(request, "endpoint_type", _BROKER_ENDPOINT)
    refused = _endpoint_error(endpoint_type)
    if refused is not None:
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=refused[0],
                                  error_message=refused[1], endpoint_type=_BROKER_ENDPOINT, cluster_id="",
                                  controller_id=-1, brokers=[], authorized_operations=None)
    world = ctx.world
    fenced = world.cluster.fenced
    with_fenced = bool(getattr(request, "include_fenced_brokers", False))
    brokers = []
    for node_id in sorted(world.cluster.brokers):
        info = world.cluster.brokers[node_id]
        is_fenced = info.node_id in fenced
        if not world.nodes[info.node_id].up or (is_fenced and not with_fenced):
            continue
        shown = advertised(world.services, ctx.listener, info)
        brokers.append(_BROKER(broker_id=shown.node_id, host=shown.host, port=shown.port, rack=shown.rack,
                               is_fenced=is_fenced))
    live = [b.broker_id for b in brokers if not b.is_fenced]
    operations = authz.operation_bits(ctx, authz.CLUSTER, CLUSTER_NAME) \
        if request.include_cluster_authorized_operations else None
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              error_message=None, endpoint_type=_BROKER_ENDPOINT, cluster_id=world.cluster.cluster_id,
                              controller_id=min(live) if live else -1, brokers=brokers,
                              authorized_operations=operations)
