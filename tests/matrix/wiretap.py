"""A recording TCP relay in front of one broker: what real clients send, on any target.

The emulator can tell the test which API versions a client used (its request observer), a real
broker cannot. So the KIP-848 matrix puts this relay between the clients and either target: it
forwards every frame unchanged except the broker addresses in Metadata and FindCoordinator
responses, which it points back at itself (otherwise a client would leave the relay after
bootstrapping), and it keeps

* every request's (client id, api key, version), and
* every ConsumerGroupHeartbeat request with the response it got, decoded by our codec, so the
  test can say what each client sends (its own member id on v1, the server assignor, the
  owned partitions) and prove that a member really spoke KIP-848 (franz-go falls back to the
  classic protocol on its own when the broker does not serve it).

It serves a single broker only: every advertised node becomes the relay (the real broker of the
tests and the emulator's default are one node each). Each accepted connection gets two threads,
one per direction; clients pipeline requests, so responses are matched by correlation id.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol import codec

METADATA, FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT = 3, 10, 68
_REWRITTEN = (METADATA, FIND_COORDINATOR)


@dataclass(frozen=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat exchange as the client sent it and the broker answered."""

    client_id: str
    version: int
    request: dict[str, Any]
    response: dict[str, Any] | None = None


def _fields(message: Any) -> dict[str, Any]:
    """The plain fields of a decoded message (nested structs as dicts, lists as lists)."""
    if isinstance(message, list):
        return {"items": [_plain(m) for m in message]}
    names = [n for n in getattr(message, "__slots__", ()) if not n.startswith("_") and n != "version"]
    if not names:
        names = [n for n in vars(message) if not n.startswith("_") and n != "version"]
    return {n: _plain(getattr(message, n)) for n in names}


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _fields(value) if hasattr(value, "__slots__") or hasattr(value, "__dict__") else str(value)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        try:
            chunk = sock.recv(n - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


@dataclass
class WireTap:
    """Listen on 127.0.0.1 (a free port) and relay to ``upstream`` (``host:port``)."""

    upstream: str
    requests: set[tuple[str, int, int]] = field(default_factory=set)  # (client id, api key, version)
    heartbeats: list[Heartbeat] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _sockets: list[socket.socket] = field(default_factory=list)
    _listener: socket.socket | None = None

    def start(self) -> WireTap:
        self._listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, name="wiretap-accept", daemon=True).start()
        return self

    @property
    def port(self) -> int:
        assert self._listener is not None
        return int(self._listener.getsockname()[1])

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in [s for s in [self._listener] if s is not None] + sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def __enter__(self) -> WireTap:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what was seen ------------------------------------------------------------------------

    def seen(self, prefix: str) -> set[tuple[str, int, int]]:
        with self._lock:
            return {r for r in self.requests if r[0].startswith(prefix)}

    def heartbeats_of(self, prefix: str) -> list[Heartbeat]:
        with self._lock:
            return [h for h in self.heartbeats if h.client_id.startswith(prefix)]

    # -- relaying -----------------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            host, port = self.upstream.rsplit(":", 1)
            try:
                server = socket.create_connection((host, int(port)), timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets += [client, server]
            pending: dict[int, tuple[int, int, Heartbeat | None]] = {}
            threading.Thread(target=self._requests, args=(client, server, pending), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, pending), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket,
                  pending: dict[int, tuple[int, int, Heartbeat | None]]) -> None:
        while (frame := _read_frame(client)) is not None:
            header = codec.peek_header(frame)
            heartbeat = None
            if header.api_key == CONSUMER_GROUP_HEARTBEAT:
                body = codec.generic(codec.decode_request(frame).body)  # kafka-python's object, also on the fast path
                heartbeat = Heartbeat(header.client_id, header.api_version, _fields(body))
            with self._lock:
                self.requests.add((header.client_id, header.api_key, header.api_version))
                pending[header.correlation_id] = (header.api_key, header.api_version, heartbeat)
            if not _send(server, frame):
                break
        _close_both(client, server)

    def _responses(self, server: socket.socket, client: socket.socket,
                   pending: dict[int, tuple[int, int, Heartbeat | None]]) -> None:
        while (frame := _read_frame(server)) is not None:
            (correlation,) = struct.unpack_from(">i", frame)
            with self._lock:
                api_key, version, heartbeat = pending.pop(correlation, (-1, -1, None))
            if api_key in _REWRITTEN:
                out = self._rewrite(api_key, version, frame, correlation)
            else:
                out = struct.pack(">i", len(frame)) + frame
            if heartbeat is not None:
                response = codec.decode_response(api_key, version, frame)
                with self._lock:
                    self.heartbeats.append(Heartbeat(heartbeat.client_id, version, heartbeat.request,
                                                     _fields(response)))
            if not _send(client, out, framed=True):
                break
        _close_both(client, server)

    def _rewrite(self, api_key: int, version: int, frame: bytes, correlation: int) -> bytes:
        """Point every broker address of a Metadata or FindCoordinator response at the relay."""
        response = codec.decode_response(api_key, version, frame)
        nodes = response.brokers if api_key == METADATA else (getattr(response, "coordinators", None) or [response])
        for node in nodes:
            if getattr(node, "host", None):
                node.host, node.port = "127.0.0.1", self.port
        return codec.encode_response(response, correlation)


def _send(sock: socket.socket, data: bytes, framed: bool = False) -> bool:
    try:
        sock.sendall(data if framed else struct.pack(">i", len(data)) + data)
    except OSError:
        return False
    return True


def _close_both(a: socket.socket, b: socket.socket) -> None:
    for sock in (a, b):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
