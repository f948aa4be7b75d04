"""A raw Kafka client for the security tests: one blocking socket (plain or TLS), frames in and out.

It says exactly what went over the wire, which is what the differential tests compare: the answer
of each request (decoded with the project's codec), raw SASL tokens (SaslHandshake v0's exchange),
and whether the server closed the connection instead of answering.
"""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass
from typing import Any

from scramp import ScramClient

from rebalance_lab.protocol import codec

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, METADATA = 17, 36, 18, 3


class Closed(Exception):
    """The server closed the connection instead of answering."""


@dataclass
class Wire:
    sock: socket.socket
    correlation: int = 0

    @classmethod
    def connect(cls, address: str, cafile: str | None = None, timeout: float = 15.0,
                context: ssl.SSLContext | None = None) -> Wire:
        """A plain connection, or TLS trusting ``cafile`` (or with ``context``, e.g. holding a client certificate)."""
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        if cafile is not None or context is not None:
            context = context or ssl.create_default_context(cafile=cafile)
            sock = context.wrap_socket(sock, server_hostname=host)
        return cls(sock)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames -------------------------------------------------------------------------------------

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except (ConnectionResetError, ssl.SSLError) as exc:
                raise Closed(str(exc)) from exc
            if not chunk:
                raise Closed(f"closed after {len(data)} of {n} bytes")
            data += chunk
        return data

    def is_closed(self, wait: float = 3.0) -> bool:
        """True if the server closes the connection within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True
        except TimeoutError:
            return False

    # -- requests -----------------------------------------------------------------------------------

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        self.correlation += 1
        framed = codec.encode_request(codec.new_request(api_key, version, **fields), self.correlation, "c1-wire")
        self.sock.sendall(framed)
        payload = self.recv_frame()
        return codec.decode_response(api_key, version, payload)

    def handshake(self, mechanism: str, version: int = 1) -> Any:
        return self.request(SASL_HANDSHAKE, version, mechanism=mechanism)

    def authenticate(self, token: bytes, version: int = 2) -> Any:
        return self.request(SASL_AUTHENTICATE, version, auth_bytes=token)

    def raw_token(self, token: bytes) -> bytes:
        self.send_frame(token)
        return self.recv_frame()


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def scram_login(wire: Wire, mechanism: str, user: str, password: str, version: int = 2) -> list[Any]:
    """Handshake v1 and SCRAM through SaslAuthenticate; the answers, the last one failed or final."""
    answers = [wire.handshake(mechanism)]
    client = ScramClient([mechanism], user, password)
    first = wire.authenticate(client.get_client_first().encode(), version)
    answers.append(first)
    if first.error_code:
        return answers
    client.set_server_first(first.auth_bytes.decode())
    final = wire.authenticate(client.get_client_final().encode(), version)
    answers.append(final)
    if not final.error_code:
        client.set_server_final(final.auth_bytes.decode())  # checks the server's signature
    return answers


def summary(answer: Any) -> tuple[Any, ...]:
    """What a differential test compares of an answer: its class, error code, message and mechanisms."""
    return (
        type(answer).__name__,
        getattr(answer, "error_code", None),
        getattr(answer, "error_message", None),
        tuple(getattr(answer, "mechanisms", None) or ()),
    )
