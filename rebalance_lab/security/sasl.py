"""One connection's SASL authentication, as Kafka 4.4.0's ``SaslServerAuthenticator`` runs it (sans-I/O).

Until authentication completes, every frame the client sends comes here instead of to the handlers:

* ``INITIAL``/``HANDSHAKE_OR_VERSIONS``: ApiVersions (answered by the shell as usual, once) or
  SaslHandshake; anything else ("Unexpected Kafka request of type X during SASL handshake.") or bytes
  that are not a Kafka request (a GSSAPI token, which Kafka would only take with GSSAPI enabled)
  closes the connection without an answer.
* SaslHandshake: an enabled mechanism is answered NONE with the enabled list; another one is answered
  UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes. v0 means the SASL tokens that
  follow are raw (size-prefixed bytes, no Kafka header: the old clients' exchange); v1 means
  SaslAuthenticate requests.
* ``AUTHENTICATE``: each token goes to the mechanism; a failure is answered (SaslAuthenticate:
  SASL_AUTHENTICATION_FAILED with Kafka's message; raw tokens: nothing) and the connection closes. With
  v1 headers, any other request is answered with its own error response carrying ILLEGAL_SASL_STATE, then
  the connection closes.

After ``COMPLETE`` the shell passes requests to the handlers with the principal ``User:<name>``; a
SaslHandshake or SaslAuthenticate then reaches its handler, which answers ILLEGAL_SASL_STATE as
KafkaApis does (re-authentication, KIP-368, is not offered: ``connections.max.reauth.ms`` is 0).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, MalformedRequest
from rebalance_lab.protocol.versions import VersionTable
from rebalance_lab.security.mechanisms import AuthenticationFailed, MechanismServer, new_server
from rebalance_lab.security.users import UserStore

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36

# (api_key, api_version, request body, error code) -> that request's error response body
ErrorAnswer = Callable[[int, int, Any, ErrorCode], Any]


class State(Enum):
    INITIAL = "initial"
    HANDSHAKE_OR_VERSIONS = "handshake-or-versions"
    HANDSHAKE = "handshake"  # after one ApiVersions, only SaslHandshake may come
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True)
class Step:
    """What the shell does with one frame: pass it to the handlers, or write ``reply`` (a whole frame,
    size prefix included) and then close the connection if ``close`` (``reason`` goes to the log)."""

    passthrough: bool = False
    reply: bytes | None = None
    close: bool = False
    reason: str = ""


PASS = Step(passthrough=True)


class SaslAuthenticator:
    def __init__(self, mechanisms: tuple[str, ...], users: UserStore, versions: VersionTable,
                 error_answer: ErrorAnswer) -> None:
        self._mechanisms = mechanisms
        self._users = users
        self._versions = versions
        self._error_answer = error_answer
        self.state = State.INITIAL
        self._server: MechanismServer | None = None
        self._headers = True  # SaslHandshake v1+: tokens in SaslAuthenticate requests

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    @property
    def username(self) -> str | None:
        return self._server.username if self._server is not None and self._server.complete else None

    def receive(self, payload: bytes) -> Step:
        if self.state is State.AUTHENTICATE:
            return self._token(payload) if self._headers else self._raw_token(payload)
        if self.state in (State.COMPLETE, State.FAILED):
            return PASS if self.state is State.COMPLETE else self._fail("authentication failed before")
        return self._kafka_request(payload)

    # -- before the mechanism is chosen -------------------------------------------------------------------

    def _kafka_request(self, payload: bytes) -> Step:
        try:
            header = codec.peek_header(payload)
        except MalformedRequest:
            header = None
        if header is None or header.api_key not in codec.API_NAMES:
            # InvalidRequestException in INITIAL_REQUEST: taken as a GSSAPI token, and GSSAPI is not offered
            return self._fail("Exception handling first SASL packet from client, GSSAPI is not supported by server")
        self.state = State.HANDSHAKE_OR_VERSIONS if self.state is State.INITIAL else self.state
        if header.api_key == API_VERSIONS:
            return self._api_versions(header)
        if header.api_key != SASL_HANDSHAKE:
            name = codec.API_NAMES[header.api_key]
            return self._fail(f"Unexpected Kafka request of type {_java_name(name)} during SASL handshake.")
        return self._handshake(header, payload)

    def _api_versions(self, header: codec.RequestHeader) -> Step:
        if self.state is not State.HANDSHAKE_OR_VERSIONS:
            return self._fail(f"Unexpected ApiVersions request received during SASL authentication state "
                              f"{_java_name(self.state.value)}_REQUEST")
        if self._versions.supports(API_VERSIONS, header.api_version):
            self.state = State.HANDSHAKE  # an unsupported version is answered (KIP-511) and may be retried
        return PASS

    def _handshake(self, header: codec.RequestHeader, payload: bytes) -> Step:
        request = _decode(payload)
        if request is None:
            return self._fail("cannot decode SaslHandshake")
        mechanism = request.body.mechanism
        self._headers = header.api_version >= 1
        enabled = list(self._mechanisms)
        if mechanism not in self._mechanisms:
            body = codec.new_response(SASL_HANDSHAKE, header.api_version,
                                      error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            return self._fail(f"Unsupported SASL mechanism {mechanism}", _frame(body, header.correlation_id))
        self._server = new_server(mechanism, self._users)
        self.state = State.AUTHENTICATE
        body = codec.new_response(SASL_HANDSHAKE, header.api_version, error_code=ErrorCode.NONE, mechanisms=enabled)
        return Step(reply=_frame(body, header.correlation_id))

    # -- the mechanism's tokens ------------------------------------------------------------------------------

    def _raw_token(self, payload: bytes) -> Step:
        assert self._server is not None
        try:
            answer = self._server.evaluate(payload)
        except AuthenticationFailed as exc:
            return self._fail(str(exc))  # no SaslAuthenticate to answer: the connection just closes
        self._advance()
        return Step(reply=struct.pack(">i", len(answer)) + answer)

    def _token(self, payload: bytes) -> Step:
        assert self._server is not None
        request = _decode(payload)
        if request is None:
            return self._fail("cannot decode the request during SASL authentication")
        if request.api_key != SASL_AUTHENTICATE:
            name = _java_name(codec.API_NAMES[request.api_key])
            body = self._error_answer(request.api_key, request.api_version, request.body, ErrorCode.ILLEGAL_SASL_STATE)
            return self._fail(f"Unexpected Kafka request of type {name} during SASL authentication.",
                              _frame(body, request.correlation_id))
        version, correlation_id = request.api_version, request.correlation_id
        try:
            answer = self._server.evaluate(bytes(request.body.auth_bytes or b""))
        except AuthenticationFailed as exc:
            body = codec.new_response(SASL_AUTHENTICATE, version, error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                      error_message=str(exc), auth_bytes=b"", session_lifetime_ms=0)
            return self._fail(str(exc), _frame(body, correlation_id))
        self._advance()
        # error_message "": the schema default Kafka leaves in place on success (not null)
        body = codec.new_response(SASL_AUTHENTICATE, version, error_code=ErrorCode.NONE, error_message="",
                                  auth_bytes=answer, session_lifetime_ms=0)
        return Step(reply=_frame(body, correlation_id))

    def _advance(self) -> None:
        assert self._server is not None
        if self._server.complete:
            self.state = State.COMPLETE

    def _fail(self, reason: str, reply: bytes | None = None) -> Step:
        self.state = State.FAILED
        return Step(reply=reply, close=True, reason=reason)


def _decode(payload: bytes) -> codec.DecodedRequest | None:
    try:
        return codec.decode_request_generic(payload)
    except MalformedRequest:
        return None


def _frame(body: Any, correlation_id: int) -> bytes:
    return codec.encode_response(body, correlation_id)


def _java_name(name: str) -> str:
    """``OffsetCommit`` -> ``OFFSET_COMMIT`` (how Java's ApiKeys enum prints itself)."""
    out = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name))
    return out.upper().replace("-", "_")
