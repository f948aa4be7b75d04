"""``StickyAssignor`` (name ``sticky``, eager only; KIP-54, spec §5)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import chain, repeat
from struct import Struct

from rebalance_lab.clients.assignors.abstract_sticky import AbstractStickyAssignor
from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.protocol import consumer_protocol


class StickyAssignor(AbstractStickyAssignor):
    """Previous ownership always comes from the user data (V1, or V0 from old clients),
    never from the protocol's OwnedPartitions/GenerationId: eager members revoke all."""

    name = "sticky"

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        super().__init__(prefer_rack_aware_logic)
        self._member_assignment: tuple[TopicPartition, ...] | None = None
        self._generation = -1

    def member_data(self, subscription: Subscription) -> consumer_protocol.StickyMemberData:
        data = subscription.user_data
        if data:
            fast = _read_v1(data)
            if fast is not None:
                return fast
        # Null/empty data, V0 and malformed data: the protocol module's rules.
        return consumer_protocol.decode_sticky_user_data(data)

    # Member side (``onAssignment`` / ``subscriptionUserData``).

    def on_assignment(self, partitions: Sequence[TopicPartition], generation: int) -> None:
        self._member_assignment = tuple(partitions)
        self._generation = generation

    def subscription_user_data(self) -> bytes | None:
        """Null until the first assignment, then V1 with the group generation."""
        if self._member_assignment is None:
            return None
        return consumer_protocol.encode_sticky_user_data(self._member_assignment, self._generation)


_INT16 = Struct(">h").unpack_from
_INT32 = Struct(">i").unpack_from


_new_tuple = tuple.__new__


@lru_cache(maxsize=4096)
def _topic_name(raw: bytes) -> str:
    # Java's new String(bytes, UTF_8): malformed input becomes U+FFFD.
    return raw.decode("utf-8", errors="replace")


@lru_cache(maxsize=1024)
def _int32_array(count: int) -> Callable[[bytes, int], tuple[int, ...]]:
    return Struct(f">{count}i").unpack_from


def _read_v1(data: bytes) -> consumer_protocol.StickyMemberData | None:
    """Sticky user data V1 (topic -> partitions array, then the generation), read the way
    ``decode_sticky_user_data`` reads it when V1 parses, without a call per field.
    ``None`` as soon as anything would fail (the caller then applies the full rules:
    the V0 fallback and the malformed case)."""
    end = len(data)
    if end < 4:
        return None
    (groups,) = _INT32(data, 0)
    pos = 4
    if groups < 0 or groups > end - pos:
        return None
    names: list[Iterable[str]] = []
    ids: list[tuple[int, ...]] = []
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
        pos += 4 * count
    if end - pos < 4:
        return None
    partitions = tuple(
        map(_new_tuple, repeat(TopicPartition), zip(chain.from_iterable(names), chain.from_iterable(ids), strict=True))
    )
    return consumer_protocol.StickyMemberData(partitions, _INT32(data, pos)[0])
