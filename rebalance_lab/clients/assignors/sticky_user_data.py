"""Fast reader of ``StickyAssignor`` user data V1 (spec §1.8) for the leader.

V1 is ``[topic: string, partitions: int32 array]`` groups, then the generation. It is read
the way ``consumer_protocol.decode_sticky_user_data`` reads it when V1 parses, without a
call per field; ``None`` whenever anything would fail, and the caller then applies the
protocol module's full rules (the V0 fallback and the malformed case).

The members of one group usually send user data of one *layout* (the same number of
topics, name lengths and partition counts: a uniform group gives each member one partition
of each of hundreds of topics). Such data is parsed with one ``struct`` call per member: the
layout seen last for a data length is tried first, and used only if every length and count
field in the data equals the layout's; otherwise the data is read group by group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, repeat
from operator import itemgetter
from struct import Struct
from typing import TYPE_CHECKING, Any

from rebalance_lab.clients.assignors.types import TopicPartition

# consumer_protocol imports this package's types: import it as a module, use it at call time.
from rebalance_lab.protocol import consumer_protocol

if TYPE_CHECKING:
    from rebalance_lab.protocol.consumer_protocol import StickyMemberData

_INT16 = Struct(">h").unpack_from
_INT32 = Struct(">i").unpack_from
_new_tuple = tuple.__new__

# Below this many topic groups reading group by group costs about as much as a layout.
_MIN_LAYOUT_GROUPS = 16
_MAX_LAYOUTS = 64
# Data length -> the last layout read with that length. Only a guess to try first: a layout
# is used only where it reads exactly what the group-by-group reader would.
_layouts: dict[int, _Layout] = {}


@lru_cache(maxsize=4096)
def _topic_name(raw: bytes) -> str:
    # Java's new String(bytes, UTF_8): malformed input becomes U+FFFD.
    return raw.decode("utf-8", errors="replace")


@lru_cache(maxsize=1024)
def _int32_array(count: int) -> Callable[[bytes, int], tuple[int, ...]]:
    return Struct(f">{count}i").unpack_from


def read_v1(data: bytes) -> StickyMemberData | None:
    """Sticky user data V1, or ``None`` if it does not parse as V1 (see the module doc)."""
    layout = _layouts.get(len(data))
    if layout is not None:
        parsed = layout.read(data)
        if parsed is not None:
            return parsed
    return _read_by_group(data)


def _read_by_group(data: bytes) -> StickyMemberData | None:
    """Field by field, checking every length as the protocol reader does; remembers the
    layout of what it read."""
    end = len(data)
    if end < 4:
        return None
    (groups,) = _INT32(data, 0)
    pos = 4
    if groups < 0 or groups > end - pos:
        return None
    names: list[Iterable[str]] = []
    ids: list[tuple[int, ...]] = []
    shape: list[tuple[int, int]] = []
    for _ in range(groups):
        if end - pos < 2:
            return None
        (length,) = _INT16(data, pos)
        pos += 2
        if length < 0 or end - pos < length + 4:
            return None
        raw = data[pos : pos + length]
        pos += length
        (count,) = _INT32(data, pos)
        pos += 4
        if count < 0 or count > end - pos or end - pos < 4 * count:
            return None
        names.append(repeat(_topic_name(raw), count))
        ids.append(_int32_array(count)(data, pos))
        shape.append((length, count))
        pos += 4 * count
    if end - pos < 4:
        return None
    _remember(end, shape)
    partitions = _partitions(chain.from_iterable(names), chain.from_iterable(ids))
    return consumer_protocol.StickyMemberData(partitions, _INT32(data, pos)[0])


def _partitions(topics: Iterable[str], ids: Iterable[int]) -> tuple[TopicPartition, ...]:
    return tuple(map(_new_tuple, repeat(TopicPartition), zip(topics, ids, strict=True)))


def _remember(end: int, shape: list[tuple[int, int]]) -> None:
    # Two or more ids too: an itemgetter of one index returns the item, not a tuple.
    if len(shape) < _MIN_LAYOUT_GROUPS or sum(count for _, count in shape) < 2:
        return
    if len(_layouts) >= _MAX_LAYOUTS:
        _layouts.clear()
    _layouts[end] = _Layout.of(tuple(shape))


@dataclass(frozen=True)
class _Layout:
    """One V1 shape as a single ``struct`` format: the groups count, per group
    ``h{length}s i {count}i``, then the generation. ``fields`` picks every length and count
    field, which must equal ``expected`` for the data to have this shape."""

    groups: int
    size: int
    counts: tuple[int, ...]
    one_each: bool  # one partition per topic group (then names and ids pair up directly)
    expected: tuple[int, ...]
    unpack: Callable[[bytes], tuple[Any, ...]]
    fields: Callable[[tuple[Any, ...]], tuple[int, ...]]
    names: Callable[[tuple[Any, ...]], tuple[bytes, ...]]
    ids: Callable[[tuple[Any, ...]], tuple[int, ...]]

    @staticmethod
    def of(shape: tuple[tuple[int, int], ...]) -> _Layout:
        fmt = [">i"]
        fields: list[int] = []
        names: list[int] = []
        ids: list[int] = []
        index = 1  # values[0] is the groups count
        for length, count in shape:
            fmt.append(f"h{length}si{count}i")
            fields += [index, index + 2]
            names.append(index + 1)
            ids.extend(range(index + 3, index + 3 + count))
            index += 3 + count
        fmt.append("i")  # the generation
        struct = Struct("".join(fmt))
        return _Layout(
            groups=len(shape),
            size=struct.size,
            counts=tuple(count for _, count in shape),
            one_each=all(count == 1 for _, count in shape),
            expected=tuple(v for pair in shape for v in pair),
            unpack=struct.unpack_from,
            fields=itemgetter(*fields),
            names=itemgetter(*names),
            ids=itemgetter(*ids),
        )

    def read(self, data: bytes) -> StickyMemberData | None:
        if len(data) < self.size:
            return None
        values = self.unpack(data)  # bytes after the generation are ignored, as by the reader
        if values[0] != self.groups or self.fields(values) != self.expected:
            return None
        topics: Iterable[str] = map(_topic_name, self.names(values))
        if not self.one_each:
            topics = chain.from_iterable(map(repeat, topics, self.counts))
        return consumer_protocol.StickyMemberData(_partitions(topics, self.ids(values)), values[-1])
