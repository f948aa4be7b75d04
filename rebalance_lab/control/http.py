"""A small HTTP/1.1 server on asyncio for the control endpoint (no framework dependency).

It understands what a JSON control API needs: a request line, headers, a ``Content-Length`` body
(no chunked uploads), keep-alive, and JSON answers, all within fixed bounds (``http_wire``). It
binds to loopback only, and serves only requests that pass its guard (``guard``: loopback Host
names, no other web origin, the optional ``--control-token``): it can stop brokers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any
from urllib.parse import quote

from rebalance_lab.control.events import EventStream
from rebalance_lab.control.guard import Guard, is_loopback_name, page_token, token_cookie
from rebalance_lab.control.http_wire import MAX_LINE, HttpProblem, HttpRequest, encode_response, read_request
from rebalance_lab.control.routes import Router

log = logging.getLogger("rebalance_lab.control")


def check_loopback(host: str) -> None:
    """Refuse any address that is not loopback, with a message saying why."""
    if not is_loopback_name(host):
        raise ValueError(f"the control endpoint listens on loopback only (127.0.0.1, ::1 or localhost), "
                         f"not {host!r}: it can stop brokers")


class ControlServer:
    def __init__(self, router: Router, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        check_loopback(host)
        self.router = router
        self.host = host
        self.port = port
        self.guard = Guard(token)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> ControlServer:
        self._server = await asyncio.start_server(self._on_connect, self.host, self.port,
                                                  family=socket.AF_UNSPEC, limit=MAX_LINE)
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
                request = await read_request(reader)
            except HttpProblem as problem:  # framing is lost: answer, then close
                writer.write(encode_response(problem.status, {"error": str(problem)}, keep_alive=False,
                                             headers=problem.headers))
                await writer.drain()
                return
            if request is None:
                return
            answer = self._answer(request)
            if isinstance(answer, EventStream):  # GET /events: the connection is the stream's until it ends
                await answer.serve(writer)
                return
            writer.write(answer)
            await writer.drain()
            if not request.keep_alive:
                return

    def _answer(self, request: HttpRequest) -> bytes | EventStream:
        try:
            self.guard.check(request)
        except HttpProblem as problem:
            log.warning("control request %s %s refused: %s", request.method, request.target[:200], problem)
            return encode_response(problem.status, {"error": str(problem)}, keep_alive=request.keep_alive,
                                   headers=problem.headers)
        if self.guard.token is not None and page_token(request) is not None:
            return _remember_token(request, self.guard.token)
        try:
            reply = self.router.handle(request.method, request.target, request.body)
        except Exception as exc:  # never drop the connection silently (STYLE principle 8)
            log.exception("control request %s %s failed", request.method, request.target[:200])
            return encode_response(500, {"error": f"internal error: {exc}"}, keep_alive=request.keep_alive)
        if isinstance(reply.payload, EventStream):
            return reply.payload
        return encode_response(reply.status, reply.payload, keep_alive=request.keep_alive, headers=reply.headers)


def _remember_token(request: HttpRequest, token: str) -> bytes:
    """``GET /?token=...`` (already checked): keep the token in a cookie and show the page at ``/``, so the token
    leaves the address bar and history, and the page's EventSource, script and buttons send it as a cookie."""
    cookie = f"{token_cookie(request)}={quote(token, safe='')}; Path=/; HttpOnly; SameSite=Strict"
    return encode_response(303, {"location": "/"}, keep_alive=request.keep_alive,
                           headers=[("Location", "/"), ("Set-Cookie", cookie), ("Referrer-Policy", "no-referrer")])
