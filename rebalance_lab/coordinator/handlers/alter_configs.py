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
from rebalance_lab.coordinator.handlers.incremental_alter_configs import respond, respond_error
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 33


def handle(ctx: RequestContext, request: Any) -> Any:
    return respond(ctx, API_KEY, request, lambda _config: topic_configs.OP_SET, incremental=False)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return respond_error(API_KEY, api_version, request, code)
