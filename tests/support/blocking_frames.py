"""Kafka's size-prefixed frames read from a blocking socket, for tests that talk to a server without asyncio."""

from __future__ import annotations

import socket
import struct


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes; ConnectionError if the peer closes first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def read_frame(sock: socket.socket) -> bytes:
    """One frame's payload (after its 4-byte size)."""
    return read_exactly(sock, struct.unpack(">i", read_exactly(sock, 4))[0])
