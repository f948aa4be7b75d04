"""SaslHandshake (17), v0-1, once the connection needs no (more) authentication.

On a SASL listener the handshake of a new connection never gets here: the shell hands every frame to
the connection's authenticator (rebalance_lab/security/sasl.py) until authentication completes. What
arrives here is a handshake on a PLAINTEXT or SSL listener, or a second one after authentication;
Kafka's ``KafkaApis.handleSaslHandshakeRequest`` answers both ILLEGAL_SASL_STATE and keeps the
connection (issue 17, defect 11: closing it made librdkafka reconnect about 19 times a second).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 17


def handle(ctx: RequestContext, request: Any) -> Any:
    return codec.new_response(API_KEY, ctx.api_version, error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
