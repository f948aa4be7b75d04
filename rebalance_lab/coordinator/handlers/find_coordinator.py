"""FindCoordinator (10), single-key v0-3 and batched v4+ (spec/coordinator.md §13.1)."""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.routing import coordinator_for
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.additional import advertised

API_KEY = 10
_GROUP, _TRANSACTION, _SHARE = 0, 1, 2
_MESSAGES = {
    ErrorCode.NONE: "NONE",  # the broker sends the error's message, literally "NONE", on success
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the "
    "client library or the message was sent to an incompatible broker. See the broker logs for more details.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


_NO_MESSAGE_IN_BATCH = (ErrorCode.NONE, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def _locate(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, int, str, int]:
    if (key_type == _SHARE and ctx.api_version < 6) or key_type not in (_GROUP, _TRANSACTION, _SHARE):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    # KafkaApis: DESCRIBE on the group (or transactional id) before looking for its coordinator
    if key_type == _GROUP and not authz.permits(ctx, authz.DESCRIBE, authz.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == _TRANSACTION and not authz.permits(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    coordinator = coordinator_for(ctx.world, key)
    node = None if coordinator is None else ctx.world.nodes.get(coordinator.node_id)
    if node is None or not node.up:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    info = advertised(ctx.world.services, ctx.listener, node.info)  # the address on the request's listener
    return ErrorCode.NONE, info.node_id, info.host, info.port


def handle(ctx: RequestContext, request: Any) -> Any:
    key_type = getattr(request, "key_type", _GROUP) if ctx.api_version >= 1 else _GROUP
    if ctx.api_version < 4:
        error, node_id, host, port = _locate(ctx, request.key, key_type)
        return codec.new_response(
            API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error,
            error_message=_MESSAGES.get(error, error.name), node_id=node_id, host=host, port=port,
        )
    coordinator = codec.data_class(codec.response_type(API_KEY), "Coordinator")
    found = []
    for key in request.coordinator_keys:
        error, node_id, host, port = _locate(ctx, key, key_type)
        # Real 4.4.0 and 3.9.2 brokers send "" here on success (spec §13.1 said null; the broker wins).
        # ... and "" for a key the caller may not DESCRIBE (the real 4.4.0 broker; v0-3 carry the message)
        message = "" if error in _NO_MESSAGE_IN_BATCH else _MESSAGES.get(error, error.name)
        found.append(coordinator(key=key, node_id=node_id, host=host, port=port, error_code=error,
                                 error_message=message))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, coordinators=found)
