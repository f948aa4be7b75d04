"""A minimal raw Kafka-protocol connection for tests: frames in, frames out, nothing hidden."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

from rebalance_lab.protocol import codec


class RawConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._correlation = 0

    @classmethod
    async def open(cls, host: str, port: int) -> RawConnection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, timeout: float = 5.0) -> bytes:
        head = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        (size,) = struct.unpack(">i", head)
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def request(self, api_key: int, version: int, client_id: str = "raw", **fields: Any) -> Any:
        self._correlation += 1
        correlation = self._correlation
        await self.send_raw(codec.encode_request(codec.new_request(api_key, version, **fields), correlation, client_id))
        payload = await self.read_frame()
        response = codec.decode_response(api_key, version, payload)
        assert response.header.correlation_id == correlation
        return response

    async def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except (ConnectionError, asyncio.IncompleteReadError):
            return True
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
