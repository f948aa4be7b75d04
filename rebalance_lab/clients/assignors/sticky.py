"""``StickyAssignor`` (name ``sticky``, eager only; KIP-54, spec §5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rebalance_lab.clients.assignors.abstract_sticky import AbstractStickyAssignor
from rebalance_lab.clients.assignors.sticky_user_data import read_v1
from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.protocol import consumer_protocol


class StickyAssignor(AbstractStickyAssignor):
    """Previous ownership always comes from the user data (V1, or V0 from old clients),
    never from the protocol's OwnedPartitions/GenerationId: eager members revoke all."""

    name: ClassVar[str] = "sticky"  # ClassVar: a class attribute when compiled (mypyc) too

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        super().__init__(prefer_rack_aware_logic)
        self._member_assignment: tuple[TopicPartition, ...] | None = None
        self._generation = -1

    def member_data(self, subscription: Subscription) -> consumer_protocol.StickyMemberData:
        data = subscription.user_data
        if data:
            fast = read_v1(data)
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
