"""AlterConfigs (33), v0-2: the legacy form, whose configs replace a resource's whole set of overrides.

Kafka 4.4.0 shares the checks of IncrementalAlterConfigs (``ConfigAdminManager.preprocess`` for the
legacy request; KRaft's ``legacyAlterConfigResource``): every config given is SET, every override not
given is removed, and a null value is "Null value not supported for : NAMES". See
``incremental_alter_configs``.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator import topic_configs
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.incremental_alter_configs import alter_all
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 33
_RESULT = codec.response_type(API_KEY).AlterConfigsResourceResponse


def handle(ctx: RequestContext, request: Any) -> Any:
    resources = [(r.resource_type, r.resource_name, [(c.name, topic_configs.OP_SET, c.value) for c in r.configs])
                 for r in request.resources]
    answers = alter_all(ctx, resources, bool(request.validate_only), incremental=False)
    responses = [_RESULT(error_code=code, error_message=message, resource_type=t, resource_name=n)
                 for t, n, code, message in answers]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, responses=responses)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    responses = [_RESULT(error_code=code, error_message=None, resource_type=r.resource_type,
                         resource_name=r.resource_name) for r in request.resources]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, responses=responses)
