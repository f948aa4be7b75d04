"""The server side of SASL PLAIN and SCRAM-SHA-256/512, answering as Kafka's ``PlainSaslServer`` and
``ScramSaslServer`` do (messages quoted from them). SCRAM itself is scramp's: nothing here computes a proof.

``evaluate(token)`` returns the next server token or raises :class:`AuthenticationFailed`. Kafka sends
two kinds of failure text: a ``SaslAuthenticationException``'s own message (PLAIN's are all of this
kind), or, for a plain ``SaslException`` (every SCRAM credential failure, so as not to reveal whether
the user exists), the generic "Authentication failed during authentication due to invalid credentials
with SASL mechanism M" built by ``SaslServerAuthenticator.handleSaslToken``.
"""

from __future__ import annotations

from typing import Protocol

from rebalance_lab.security.users import SCRAM_MECHANISMS, ScramCredential, UserStore

PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)


class AuthenticationFailed(Exception):
    """The client's credentials were refused; ``str(exc)`` is what Kafka writes in the response."""


def invalid_credentials(mechanism: str) -> AuthenticationFailed:
    return AuthenticationFailed(
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )


class MechanismServer(Protocol):
    mechanism: str
    complete: bool
    username: str | None

    def evaluate(self, token: bytes) -> bytes: ...


class PlainServer:
    """RFC 4616 ``[authzid] NUL authcid NUL passwd`` (``PlainSaslServer.evaluateResponse``)."""

    mechanism = PLAIN

    def __init__(self, users: UserStore) -> None:
        self._users = users
        self.complete = False
        self.username: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\x00", 3)
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        if not self._users.check_password(username, password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.username = username
        self.complete = True
        return b""


class ScramServer:
    """Two rounds: client-first -> server-first, client-final -> server-final (``ScramSaslServer``)."""

    def __init__(self, mechanism: str, users: UserStore) -> None:
        from scramp import ScramMechanism  # imported when a SCRAM login starts: serve without SCRAM never pays for it

        self.mechanism = mechanism
        self._users = users
        self._server = ScramMechanism(mechanism).make_server(self._credential)
        self._round = 0
        self.complete = False
        self.username: str | None = None
        self._asked: str | None = None

    def _credential(self, username: str) -> ScramCredential:
        self._asked = _unescape_saslname(username)
        credential = self._users.scram_credential(self.mechanism, self._asked)
        if credential is None:
            raise KeyError(username)  # Kafka: "Authentication failed: Invalid user credentials" (a SaslException)
        return credential

    def evaluate(self, token: bytes) -> bytes:
        from scramp import ScramException

        try:
            text = token.decode("utf-8")
            self._round += 1
            if self._round == 1:
                self._server.set_client_first(text)
                return str(self._server.get_server_first()).encode()
            if self._round == 2:
                self._server.set_client_final(text)
                answer = str(self._server.get_server_final()).encode()
                self.username, self.complete = self._asked, True
                return answer
        except (ScramException, KeyError, UnicodeDecodeError, ValueError) as exc:
            raise invalid_credentials(self.mechanism) from exc
        raise invalid_credentials(self.mechanism)  # a third token: "Unexpected challenge in Sasl server state"


def _unescape_saslname(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=`` (``ScramFormatter.username``)."""
    return name.replace("=2C", ",").replace("=3D", "=")


def new_server(mechanism: str, users: UserStore) -> MechanismServer:
    if mechanism == PLAIN:
        return PlainServer(users)
    return ScramServer(mechanism, users)
