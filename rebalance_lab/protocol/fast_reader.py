"""The request reader the struct fast paths share (KIP-848's ConsumerGroupHeartbeat, classic JoinGroup/SyncGroup):
a position in the bytes and the classic or the compact (flexible) form of lengths. Anything the fast paths do not
take raises :class:`Unusual`, and the request goes to the generic codec, which gives its own verdict."""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class Unusual(Exception):
    """Input a fast path leaves to the generic codec."""


class FastReader:
    __slots__ = ("data", "flexible", "pos")

    def __init__(self, data: bytes, pos: int, flexible: bool = True) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def int32(self) -> int:
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def uvarint(self) -> int:
        """``ByteUtils.readUnsignedVarint``; longer than 5 bytes is left to the generic codec."""
        data, pos = self.data, self.pos
        value = data[pos]
        pos += 1
        if value & 0x80:
            value &= 0x7F
            shift = 7
            while True:
                byte = data[pos]
                pos += 1
                value |= (byte & 0x7F) << shift
                if not byte & 0x80:
                    break
                shift += 7
                if shift > 28:
                    raise Unusual("a varint longer than 5 bytes")
        self.pos = pos
        return value

    def length(self) -> int:
        """A string's length (an int16 in the classic form), or a compact string's, bytes' or array's; -1 for null."""
        if self.flexible:
            return self.uvarint() - 1
        (length,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(length)

    def sized(self, length: int) -> bytes:
        end = self.pos + length
        if end > len(self.data):
            raise Unusual("a value past the end")
        raw = self.data[self.pos:end]
        self.pos = end
        return raw

    def nullable_string(self) -> str | None:
        length = self.length()
        return None if length < 0 else self.sized(length).decode("utf-8")  # bad UTF-8 raises: the codec decides

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise Unusual("a null non-nullable string")
        return value

    def bytes_(self) -> bytes:
        length = self.length() if self.flexible else self.int32()  # classic bytes: an int32 length
        if length < 0:
            raise Unusual("null non-nullable bytes")
        return bytes(self.sized(length))

    def array_length(self) -> int:
        length = self.length() if self.flexible else self.int32()
        if length < 0:
            raise Unusual("a null array")
        return length

    def no_tags(self) -> None:
        """A flexible struct's tagged fields: only an empty set is taken."""
        if self.flexible:
            if self.data[self.pos] != 0:
                raise Unusual("tagged fields")
            self.pos += 1

    def end(self) -> None:
        self.no_tags()
        if self.pos != len(self.data):
            raise Unusual("trailing bytes")
