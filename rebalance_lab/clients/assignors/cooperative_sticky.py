"""``CooperativeStickyAssignor`` (name ``cooperative-sticky``; KIP-429, spec §5.6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import ClassVar

from rebalance_lab.clients.assignors.abstract_sticky import (
    AbstractStickyAssignor,
    Lists,
    remove_first,
)
from rebalance_lab.clients.assignors.common import PartitionIds, PartitionsPerTopic
from rebalance_lab.clients.assignors.types import GroupSubscription, Subscription, TopicPartition
from rebalance_lab.protocol import consumer_protocol

_new_object = object.__new__


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Sticky, then withholds every partition that changes owner: the current owner revokes
    it first and the next rebalance hands it over (two-phase, spec §5.6)."""

    name: ClassVar[str] = "cooperative-sticky"  # ClassVar: a class attribute when compiled (mypyc) too
    supported_protocols: ClassVar[tuple[str, ...]] = ("COOPERATIVE", "EAGER")

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        super().__init__(prefer_rack_aware_logic)
        self._generation = -1

    def member_data(self, subscription: Subscription) -> consumer_protocol.StickyMemberData:
        """Subscription v2+ with a generation: protocol fields. Otherwise owned partitions
        from the protocol and the generation from the 4-byte user data."""
        owned = tuple(subscription.owned_partitions)
        gen = subscription.generation_id
        if gen is None or gen < 0:
            gen = consumer_protocol.decode_cooperative_user_data(subscription.user_data)
        if not owned:
            return _owning_nothing(gen)
        # Made as the frozen dataclass's __init__ makes it, without its two object.__setattr__ calls: one per
        # member that owns something, in every assignment of the replay's what-if.
        data = _new_object(consumer_protocol.StickyMemberData)
        vars(data).update(partitions=owned, generation=gen)
        return data

    def assign_partitions(
        self,
        ppt: PartitionsPerTopic,
        group: GroupSubscription,
        members: Sequence[str],
        *,
        partition_ids: PartitionIds | None = None,
    ) -> Lists:
        lists = super().assign_partitions(ppt, group, members, partition_ids=partition_ids)
        transferring = self.partitions_transferring_ownership
        if transferring is None:
            transferring = _transferring_from_owned(group.members, lists)
        for tp, consumer in transferring.items():
            remove_first(lists[consumer], tp)
        return lists

    # Member side (``onAssignment`` / ``subscriptionUserData``).

    def on_assignment(self, generation: int) -> None:
        self._generation = generation

    def subscription_user_data(self) -> bytes:
        return consumer_protocol.encode_cooperative_user_data(self._generation)


@lru_cache(maxsize=1024)
def _owning_nothing(generation: int | None) -> consumer_protocol.StickyMemberData:
    """Member data without partitions, made once per generation (immutable): most members of a
    large replay own nothing, as a member that rejoins has a new id."""
    return consumer_protocol.StickyMemberData((), generation)


def _transferring_from_owned(subs: Mapping[str, Subscription], lists: Lists) -> dict[TopicPartition, str]:
    """General path: a partition newly given to a member that some member owned (by its raw
    ``ownedPartitions``) and no longer keeps."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for consumer, assigned in lists.items():
        owned = subs[consumer].owned_partitions
        owned_set, assigned_set = set(owned), set(assigned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = consumer
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: c for tp, c in added.items() if tp in revoked}
