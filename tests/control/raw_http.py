"""Raw HTTP/1.1 exchanges with the control endpoint, byte for byte, for the tests of its defences and bounds."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def error(self) -> str:
        return str(self.body["error"])


def authority(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host.strip("[]"), int(port)


async def exchange(url: str, raw: bytes) -> Answer:
    """Send ``raw`` on a fresh connection and read one answer (the endpoint closes or keeps it; we close)."""
    host, port = authority(url)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(raw)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {n.lower(): v.strip() for n, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers["content-length"]))
        return Answer(int(lines[0].split()[1]), headers, json.loads(body))
    finally:
        writer.close()


def request(method: str, path: str, *, host: str, headers: dict[str, str] | None = None,
            body: bytes = b"") -> bytes:
    """One request's bytes; ``Content-Length`` added for a body."""
    fields = {"Host": host, **(headers or {})}
    if body:
        fields.setdefault("Content-Length", str(len(body)))
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"{method} {path} HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode("latin-1") + body


async def call(url: str, method: str, path: str, *, headers: dict[str, str] | None = None,
               body: Any = None, host: str | None = None) -> Answer:
    """A request with the endpoint's own Host (unless given) and a JSON body when ``body`` is not None."""
    data = b"" if body is None else json.dumps(body).encode()
    fields = dict(headers or {})
    if data:
        fields.setdefault("Content-Type", "application/json")
    return await exchange(url, request(method, path, host=host or url.removeprefix("http://"), headers=fields,
                                       body=data))
