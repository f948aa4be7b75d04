"""One client TCP connection: framing, correlation ids and pipelining.

A plain :class:`asyncio.Protocol` rather than streams: no reader task per connection,
so a load test can hold thousands of them in one process. Requests may be pipelined;
Kafka answers a connection's requests in order (a broker reads the next request only
after answering the previous one), so responses are matched to a FIFO of pending
requests and the correlation id is checked.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from rebalance_lab.protocol import codec

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")


class ConnectionLost(ConnectionError):
    """The connection closed while requests were in flight (or before sending)."""


class ProtocolViolation(RuntimeError):
    """The peer answered with a correlation id we did not expect."""


@dataclass
class _Pending:
    correlation_id: int
    api_key: int
    api_version: int
    future: asyncio.Future[Any]


class Connection(asyncio.Protocol):
    """Use :meth:`open`; then :meth:`send` returns a future per request."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Pending] = deque()
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        self._lost: BaseException | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}

    @classmethod
    async def open(cls, host: str, port: int, client_id: str) -> Connection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(lambda: cls(client_id), host, port)
        return protocol

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer.extend(data)
        while len(self._buffer) >= _SIZE.size:
            (size,) = _SIZE.unpack_from(self._buffer, 0)
            if len(self._buffer) < _SIZE.size + size:
                return
            payload = bytes(self._buffer[_SIZE.size : _SIZE.size + size])
            del self._buffer[: _SIZE.size + size]
            self._deliver(payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or ConnectionLost("connection closed by peer")
        self._transport = None
        while self._pending:
            pending = self._pending.popleft()
            if not pending.future.done():
                pending.future.set_exception(ConnectionLost(f"connection lost: {self._lost}"))

    # -- requests ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def send(self, request: Any) -> asyncio.Future[Any]:
        """Write ``request`` (a ``codec.new_request`` body) now; the future gets the decoded
        response body."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.is_open:
            future.set_exception(ConnectionLost("connection is closed"))
            return future
        correlation_id = next(self._ids)
        frame = codec.encode_request(request, correlation_id, self.client_id)
        self._pending.append(_Pending(correlation_id, int(request.API_KEY), int(request.version), future))
        assert self._transport is not None
        self._transport.write(frame)
        return future

    async def request(self, request: Any) -> Any:
        return await self.send(request)

    def _deliver(self, payload: bytes) -> None:
        if not self._pending:
            self._abort(ProtocolViolation("a response arrived with no request in flight"))
            return
        pending = self._pending.popleft()
        (correlation_id,) = _CORRELATION.unpack_from(payload, 0)
        if correlation_id != pending.correlation_id:
            pending.future.set_exception(
                ProtocolViolation(f"expected correlation id {pending.correlation_id}, got {correlation_id}")
            )
            self._abort(ProtocolViolation("responses out of order"))
            return
        if pending.future.done():
            return  # the caller stopped waiting (cancelled); the bytes are consumed anyway
        try:
            pending.future.set_result(codec.decode_response(pending.api_key, pending.api_version, payload))
        except Exception as exc:  # the generated decoders raise many kinds of errors
            pending.future.set_exception(exc)

    def _abort(self, exc: Exception) -> None:
        if self._transport is not None:
            self._transport.abort()
        self.connection_lost(exc)

    def close(self) -> None:
        """Drop the connection at once: in-flight requests fail with ConnectionLost."""
        if self._transport is not None:
            self._transport.abort()
        self.connection_lost(ConnectionLost("closed by this client"))

    # -- version negotiation ---------------------------------------------------------------

    async def negotiate(self, version: int = 3) -> dict[int, tuple[int, int]]:
        """ApiVersions: remember the broker's ranges (used by :meth:`pick`)."""
        fields: dict[str, Any] = {}
        if version >= 3:
            fields = {"client_software_name": "rebalance-lab", "client_software_version": "0.1.0"}
        response = await self.request(codec.new_request(18, version, **fields))
        self.api_versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        return self.api_versions

    def pick(self, api_key: int, preferred: int) -> int:
        """The highest version <= ``preferred`` both sides know (``preferred`` if unknown)."""
        codec_range = codec.codec_version_range(api_key)
        high = preferred if codec_range is None else min(preferred, codec_range[1])
        broker = self.api_versions.get(api_key)
        if broker is None:
            return high
        if high < broker[0]:
            return broker[0]  # the broker removed our preferred version (KIP-896)
        return min(high, broker[1])


def split_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` (IPv6 in brackets) -> [(host, port), ...]."""
    out: list[tuple[str, int]] = []
    for item in bootstrap.split(","):
        item = item.strip()
        if not item:
            continue
        host, _, port = item.rpartition(":")
        out.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not out:
        raise ValueError(f"no host:port in bootstrap {bootstrap!r}")
    return out
