"""SaslAuthenticate (36), v0-2, once the connection needs no (more) authentication.

As for SaslHandshake (see sasl_handshake.py), only requests outside a SASL exchange get here;
``KafkaApis.handleSaslAuthenticateRequest`` answers them ILLEGAL_SASL_STATE with this message.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 36


def handle(ctx: RequestContext, request: Any) -> Any:
    return codec.new_response(
        API_KEY, ctx.api_version, error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"", session_lifetime_ms=0,
    )
