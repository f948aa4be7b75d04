"""HTTP/1.1 on the wire for the control endpoint: read one request within fixed bounds, encode one answer.

Every bound breaks with the status a browser, curl or an HTTP library understands, never with a
traceback: a request line over 64 KiB is 414, too many or too long header lines 431, a body over
1 MiB 413, a chunked body 411, anything unparseable 400. The connection is closed after such an
answer, since the rest of its bytes cannot be trusted to start a new request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, NamedTuple

MAX_LINE = 64 * 1024  # the request line, and the reader's buffer limit (asyncio's own default)
MAX_HEADER_BYTES = 64 * 1024  # all header lines together
MAX_HEADER_LINES = 100
MAX_BODY = 1 << 20


class HttpProblem(Exception):
    """A request the endpoint answers with an error status (and, for a framing problem, a closed connection)."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.headers = tuple(headers)


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def keep_alive(self) -> bool:
        return self.headers.get("connection", "").lower() != "close"


async def _line(reader: asyncio.StreamReader, status: int, what: str) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # asyncio's LimitOverrunError, surfaced by readline: the line passed MAX_LINE
        raise HttpProblem(status, f"{what} is longer than {MAX_LINE} bytes") from None


def _request_line(line: bytes) -> tuple[str, str]:
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise HttpProblem(400, f"malformed request line {line[:80]!r}")
    if not parts[2].startswith("HTTP/1."):
        raise HttpProblem(505, f"{parts[2]} is not supported; use HTTP/1.1")
    return parts[0].upper(), parts[1]


async def _headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    total = 0
    for _ in range(MAX_HEADER_LINES + 1):
        raw = await _line(reader, 431, "a header line")
        if raw in (b"\r\n", b"\n", b""):
            return headers
        total += len(raw)
        if total > MAX_HEADER_BYTES:
            raise HttpProblem(431, f"the header lines are longer than {MAX_HEADER_BYTES} bytes together")
        name, colon, value = raw.decode("latin-1").partition(":")
        if not colon or not name.strip() or name != name.strip():
            raise HttpProblem(400, f"malformed header line {raw[:80]!r}")
        headers[name.lower()] = value.strip()
    raise HttpProblem(431, f"more than {MAX_HEADER_LINES} header lines")


def _body_length(headers: dict[str, str]) -> int:
    if "transfer-encoding" in headers:
        raise HttpProblem(411, "chunked request bodies are not supported; send Content-Length")
    raw = headers.get("content-length", "0")
    if not raw.isdigit():
        raise HttpProblem(400, f"Content-Length {raw[:40]!r} is not a number")
    length = int(raw)
    if length > MAX_BODY:
        raise HttpProblem(413, f"a body of {length} bytes is larger than the limit of {MAX_BODY}")
    return length


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, None at a clean end of stream; HttpProblem when out of bounds."""
    line = await _line(reader, 414, "the request line")
    while line in (b"\r\n", b"\n"):  # RFC 9112 §2.2: ignore empty lines before a request line
        line = await _line(reader, 414, "the request line")
    if not line:
        return None
    method, target = _request_line(line)
    headers = await _headers(reader)
    length = _body_length(headers)
    body = await reader.readexactly(length) if length else b""
    return HttpRequest(method, target, headers, body)


class Raw(NamedTuple):
    """A body that is not JSON (the live page, its script and style sheet)."""

    content_type: str
    body: bytes


def encode_response(status: int, payload: Any, *, keep_alive: bool, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """A JSON answer (or a :class:`Raw` one); ``no-store`` and ``nosniff`` so no browser caches it or reads it as
    anything else."""
    if isinstance(payload, Raw):
        body, content_type = payload.body, payload.content_type
    else:
        body, content_type = json.dumps(payload, indent=None, default=str).encode() + b"\n", "application/json"
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}",
             f"Content-Length: {len(body)}", "Cache-Control: no-store", "X-Content-Type-Options: nosniff",
             *(f"{name}: {value}" for name, value in headers),
             f"Connection: {'keep-alive' if keep_alive else 'close'}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
