"""Size-prefixed Kafka frames cut out of whatever the socket delivered (sans-I/O).

The shell reads a connection in large chunks and takes every complete frame of a chunk in turn,
so pipelined requests (a KIP-848 member sends one heartbeat after another on one connection)
cost one read per chunk instead of two ``readexactly`` per frame, and their responses can leave
in one write. Errors carry the same words as the frame-by-frame reader had: the shell closes the
connection with them (Kafka's ``NetworkReceive`` closes it too).
"""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")
# What both shells (the frames' consumers) (server.py's asyncio one and early.py's) read, hand off and hold back alike:
# Bounded reads: a connection holds at most one frame plus one read (the frame's size comes first,
# and socket.request.max.bytes bounds it), and is read again only when it has no complete frame left.
READ_SIZE = 64 * 1024
OFFLOAD_BYTES = 256 * 1024  # a frame this big is decoded in the codec thread, and its answer encoded there
WRITE_HIGH_WATER = 256 * 1024  # unsent answer bytes above which a connection is no longer read


class FrameError(Exception):
    """The byte stream is not a sequence of acceptable frames (the message says why)."""


class FrameBuffer:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes  # may change while the connection lives (SASL: smaller until authenticated)
        self._data = bytearray()
        self._pos = 0

    def feed(self, chunk: bytes) -> None:
        if self._pos:
            del self._data[: self._pos]  # drop what was consumed, once per chunk
            self._pos = 0
        self._data += chunk

    def next_frame(self) -> bytes | None:
        """The next complete frame's payload, or None until more bytes arrive.

        Raises FrameError as soon as a size outside ``0..max_bytes`` (``socket.request.max.bytes``) is read.
        """
        data, pos = self._data, self._pos
        if len(data) - pos < 4:
            return None
        (size,) = _SIZE.unpack_from(data, pos)
        if size < 0 or size > self.max_bytes:
            raise FrameError(f"frame of {size} bytes is outside 0..{self.max_bytes} (socket.request.max.bytes)")
        end = pos + 4 + size
        if len(data) < end:
            return None
        self._pos = end
        return bytes(data[pos + 4 : end])

    def remaining(self) -> bytes:
        """Every byte fed but not yet taken as a frame (a shell handing the connection over passes them on)."""
        return bytes(self._data[self._pos :])

    def drained(self) -> bool:
        """Whether every byte fed so far was taken as a frame (nothing half-received is waiting)."""
        return self._pos == len(self._data)

    def check_end(self) -> None:
        """At end of stream: raise FrameError if a frame was cut short."""
        left = len(self._data) - self._pos
        if 0 < left < 4:
            raise FrameError(f"truncated frame size ({left} of 4 bytes)")
        if left:
            (size,) = _SIZE.unpack_from(self._data, self._pos)
            raise FrameError(f"truncated frame: got {left - 4} of {size} bytes")
