"""A listener's security protocol and what each of its connections needs (Kafka's ``ChannelBuilder``s).

``ListenerSecurity.build(config)`` checks the options once at start; ``session(ssl_object)`` gives one
connection its :class:`ConnectionSecurity`: the principal (ANONYMOUS, the client certificate's subject, or
``User:<name>`` once SASL completes) and, on SASL listeners, the authenticator every frame passes until
authentication completes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from rebalance_lab.protocol.java_hashmap import string_hash_order
from rebalance_lab.protocol.versions import VersionTable
from rebalance_lab.security.mechanisms import MECHANISMS
from rebalance_lab.security.tls import ANONYMOUS, peer_principal, server_context
from rebalance_lab.security.users import UserStore, parse_user, read_users_file

if TYPE_CHECKING:  # the SASL exchange is imported by a SASL listener's first connection (serve's start, issue 22)
    import ssl  # by tls.server_context, for a TLS listener only (cli.py: a plain serve never loads OpenSSL)

    from rebalance_lab.security.sasl import ErrorAnswer, SaslAuthenticator, Step


class SecurityProtocol(StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


def any_tls(options: SecurityOptions) -> bool:
    """Whether the main or an additional listener is SSL or SASL_SSL (an unknown name is not: build refuses it)."""
    names = [options.listener, *(spec.partition(":")[0] for spec in options.additional_listeners)]
    return any(name.upper() in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL) for name in names)


SASL_MAX_RECEIVE_BYTES = 524_288  # sasl.server.max.receive.size (BrokerSecurityConfigs, default)


class FrameLimit(Protocol):
    """The shell's frame reader (coordinator/framing.FrameBuffer): its largest acceptable frame."""

    max_bytes: int


class ListenerConfigError(ValueError):
    """Security options that do not fit together (one line, for the CLI's exit code 2)."""


class SecurityOptions(Protocol):
    """The ``serve`` options of a listener (EmulatorConfig's fields of the same names)."""

    @property
    def listener(self) -> str: ...
    @property
    def sasl_mechanisms(self) -> tuple[str, ...]: ...
    @property
    def users(self) -> tuple[str, ...]: ...  # NAME:PASSWORD
    @property
    def users_file(self) -> str | None: ...
    @property
    def ssl_certfile(self) -> str | None: ...
    @property
    def ssl_keyfile(self) -> str | None: ...
    @property
    def ssl_cafile(self) -> str | None: ...
    @property
    def additional_listeners(self) -> tuple[str, ...]: ...  # PROTOCOL[:PORT] (security/additional.py)


class ConnectionSecurity:
    """One connection: its principal, and its SASL exchange while that is not complete.

    ``authenticating`` and ``principal`` are plain attributes, updated by :meth:`receive`: the shell reads
    them on every request, and a PLAINTEXT connection must cost no more than before (one attribute read).
    """

    __slots__ = ("_authenticator", "_frames", "_full_limit", "authenticating", "listener", "principal")

    def __init__(self, listener: str, principal: str, authenticator: SaslAuthenticator | None) -> None:
        self.listener = listener
        self.principal = principal
        self.authenticating = authenticator is not None
        self._authenticator = authenticator
        self._frames: FrameLimit | None = None
        self._full_limit = 0

    def bind_frames(self, frames: FrameLimit) -> None:
        """Until SASL completes, frames over ``sasl.server.max.receive.size`` close the connection, as
        ``SaslServerAuthenticator`` reads with that limit ("invalid receive size"): an unauthenticated
        client cannot make the server buffer up to ``socket.request.max.bytes``."""
        if self.authenticating:
            self._frames, self._full_limit = frames, frames.max_bytes
            frames.max_bytes = min(frames.max_bytes, SASL_MAX_RECEIVE_BYTES)

    def receive(self, payload: bytes) -> Step:
        assert self._authenticator is not None
        step = self._authenticator.receive(payload)
        if self._authenticator.complete:
            self.authenticating = False
            self.principal = f"User:{self._authenticator.username}"  # DefaultKafkaPrincipalBuilder: USER_TYPE
            if self._frames is not None:
                self._frames.max_bytes = self._full_limit
        return step


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: SecurityProtocol
    mechanisms: tuple[str, ...]
    users: UserStore
    ssl_context: ssl.SSLContext | None

    @classmethod
    def build(cls, options: SecurityOptions, listener: str | None = None) -> ListenerSecurity:
        """The main listener, or ``listener`` (an additional one) sharing the same users and TLS files."""
        protocol = _protocol(listener or options.listener)
        others = [_protocol(spec.partition(":")[0]) for spec in options.additional_listeners]
        everyone = [_protocol(options.listener), *others]
        mechanisms = _mechanisms(protocol, options.sasl_mechanisms, any(p.sasl for p in everyone))
        users = UserStore.build(_users(options), mechanisms)
        if protocol.sasl and not users.passwords:
            raise ListenerConfigError(f"the {protocol} listener needs at least one --user or --users-file")
        context = None
        if protocol.tls:
            if not options.ssl_certfile:
                raise ListenerConfigError(f"the {protocol} listener needs --ssl-certfile (and --ssl-keyfile)")
            context = server_context(options.ssl_certfile, options.ssl_keyfile, options.ssl_cafile)
        elif (options.ssl_certfile or options.ssl_cafile) and not any(p.tls for p in everyone):
            raise ListenerConfigError(f"--ssl-* options need an SSL or SASL_SSL listener, not {protocol}")
        return cls(protocol, mechanisms, users, context)

    def session(self, ssl_object: Any, versions: VersionTable, error_answer: ErrorAnswer) -> ConnectionSecurity:
        principal = peer_principal(ssl_object) if self.protocol is SecurityProtocol.SSL else ANONYMOUS
        if not self.protocol.sasl:
            return ConnectionSecurity(self.protocol.value, principal, None)
        from rebalance_lab.security.sasl import SaslAuthenticator

        authenticator = SaslAuthenticator(self.mechanisms, self.users, versions, error_answer)
        return ConnectionSecurity(self.protocol.value, principal, authenticator)


def _protocol(name: str) -> SecurityProtocol:
    try:
        return SecurityProtocol(name.upper())
    except ValueError:
        known = ", ".join(p.value for p in SecurityProtocol)
        raise ListenerConfigError(f"unknown listener {name!r}; known: {known}") from None


def _mechanisms(protocol: SecurityProtocol, asked: Sequence[str], any_sasl: bool) -> tuple[str, ...]:
    unknown = [m for m in asked if m.upper() not in MECHANISMS]
    if unknown:
        raise ListenerConfigError(f"unknown SASL mechanism {unknown[0]!r}; known: {', '.join(MECHANISMS)}")
    if asked and not any_sasl:
        raise ListenerConfigError(f"--sasl-mechanism needs a SASL_PLAINTEXT or SASL_SSL listener, not {protocol}")
    if not protocol.sasl:
        return ()
    if not asked:
        return ("PLAIN",)  # Kafka's sasl.enabled.mechanisms default is GSSAPI, which is not offered here
    # SaslServerAuthenticator lists them as new ArrayList<>(new HashSet<>(sasl.enabled.mechanisms)): Java's
    # HashSet order, not the configured one (PLAIN, SCRAM-SHA-512, SCRAM-SHA-256 on a real 4.4.0 broker)
    return tuple(string_hash_order(m.upper() for m in asked))


def _users(options: SecurityOptions) -> list[tuple[str, str]]:
    users = [parse_user(spec) for spec in options.users]
    if options.users_file:
        users += read_users_file(options.users_file)
    return users
