"""A small HTTP/1.1 server on asyncio for the control endpoint (no framework dependency).

It understands what a JSON control API needs: a request line, headers, a
``Content-Length`` body (no chunked uploads), keep-alive, and JSON answers. It binds
to loopback only: the endpoint has no authentication, and it can stop brokers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import socket
from http import HTTPStatus
from typing import Any

from rebalance_lab.control.routes import Router

log = logging.getLogger("rebalance_lab.control")
MAX_BODY = 1 << 20
MAX_HEADER_LINES = 100


class BadRequest(Exception):
    pass


def check_loopback(host: str) -> None:
    """Refuse any address that is not loopback, with a message saying why."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"the control endpoint listens on loopback only (127.0.0.1, ::1 or localhost), "
                         f"not {host!r}: it has no authentication and can stop brokers")


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"malformed request line {line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise BadRequest("too many header lines")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise BadRequest("chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest("Content-Length is not a number") from None
    if length < 0 or length > MAX_BODY:
        raise BadRequest(f"body of {length} bytes is outside 0..{MAX_BODY}")
    body = await reader.readexactly(length) if length else b""
    return parts[0].upper(), parts[1], headers, body


def _encode(status: int, payload: Any, keep_alive: bool) -> bytes:
    body = json.dumps(payload, indent=None, default=str).encode() + b"\n"
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    return head.encode("latin-1") + body


class ControlServer:
    def __init__(self, router: Router, host: str = "127.0.0.1", port: int = 0) -> None:
        check_loopback(host)
        self.router = router
        self.host = host
        self.port = port
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> ControlServer:
        self._server = await asyncio.start_server(self._on_connect, self.host, self.port,
                                                  family=socket.AF_UNSPEC)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                request = await _read_request(reader)
            except BadRequest as exc:
                writer.write(_encode(400, {"error": str(exc)}, keep_alive=False))
                await writer.drain()
                return
            if request is None:
                return
            method, path, headers, body = request
            try:
                status, payload = self.router.handle(method, path, body)
            except Exception as exc:  # never drop the connection silently (STYLE principle 8)
                log.exception("control request %s %s failed", method, path)
                status, payload = 500, {"error": f"internal error: {exc}"}
            keep_alive = headers.get("connection", "").lower() != "close"
            writer.write(_encode(status, payload, keep_alive))
            await writer.drain()
            if not keep_alive:
                return
