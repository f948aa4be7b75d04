"""The request reader the struct fast paths share (KIP-848's ConsumerGroupHeartbeat, classic JoinGroup/SyncGroup):
a position in the bytes and the classic or the compact (flexible) form of lengths. Anything the fast paths do not
take raises :class:`Unusual`, and the request goes to the generic codec, which gives its own verdict."""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class Unusual(Exception):
    """Input a fast path leaves to the generic codec."""


def uvarint_at(data: bytes, pos: int) -> tuple[int, int]:
    """``ByteUtils.readUnsignedVarint`` at ``pos``: the value and the position after it; longer than 5 bytes is
    left to the generic codec."""
    value = data[pos]
    pos += 1
    if value < 0x80:
        return value, pos
    value &= 0x7F
    shift = 7
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise Unusual("a varint longer than 5 bytes")


# Readers at a position for the struct fast paths that read without a FastReader (classic JoinGroup/SyncGroup:
# a method call per field was most of their decoding, issue 22). They return the value and the position after it
# and do not check the end of the data: a value past the end leaves the position past it, which the caller's final
# ``pos == len(data)`` check refuses (every further read there raises IndexError or struct.error first).


def string16_at(data: bytes, pos: int) -> tuple[str | None, int]:
    """A classic (int16-length) nullable string; any negative length is null."""
    (length,) = _I16.unpack_from(data, pos)
    pos += 2
    if length < 0:
        return None, pos
    end = pos + length
    return data[pos:end].decode("utf-8"), end  # bad UTF-8 raises: the generic codec decides


def compact_string_at(data: bytes, pos: int) -> tuple[str | None, int]:
    """A compact (varint length + 1) nullable string."""
    length = data[pos]
    pos += 1
    if length & 0x80:
        length, pos = uvarint_at(data, pos - 1)
    if not length:
        return None, pos
    end = pos + length - 1
    return data[pos:end].decode("utf-8"), end


def compact_length_at(data: bytes, pos: int) -> tuple[int, int]:
    """A compact bytes' or array's length (-1 for null)."""
    length = data[pos]
    if length < 0x80:
        return length - 1, pos + 1
    length, pos = uvarint_at(data, pos)
    return length - 1, pos


class FastReader:
    __slots__ = ("data", "flexible", "pos")

    def __init__(self, data: bytes, pos: int, flexible: bool = True) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def int32(self) -> int:
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def uvarint(self) -> int:
        value, self.pos = uvarint_at(self.data, self.pos)
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
