"""What ``sticky`` and ``cooperative-sticky`` share (``AbstractStickyAssignor``, spec §5).

Step 0 resolves previous ownership and decides between the constrained builder (all
subscriptions equal) and the general builder. Iteration follows the leader's member
``HashMap`` order (spec §5.8), which decides conflicting claims and quota winners.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, ClassVar

from rebalance_lab.clients.assignors.common import (
    PartitionIds,
    PartitionsPerTopic,
    gc_paused,
    member_hash_order,
    partition_ids_of,
    topic_metadata,
    wrap,
)
from rebalance_lab.clients.assignors.java_hashmap import string_hash_order
from rebalance_lab.clients.assignors.partition_movements import PartitionMovements
from rebalance_lab.clients.assignors.sticky_constrained import ConstrainedBuilder
from rebalance_lab.clients.assignors.sticky_general import GeneralBuilder, PrevOwner
from rebalance_lab.clients.assignors.sticky_kernel import constrained_without_racks
from rebalance_lab.clients.assignors.sticky_racks import RackInfo
from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    Subscription,
    TopicPartition,
)

if TYPE_CHECKING:
    # consumer_protocol imports this package's types, so it is only used at call time here.
    from rebalance_lab.protocol.consumer_protocol import StickyMemberData as MemberData

DEFAULT_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION
Lists = dict[str, list[TopicPartition]]


def protocol_generation(subscription: Subscription) -> int:
    """``subscription.generationId().orElse(-1)``; the Java constructor maps < 0 to empty."""
    gen = subscription.generation_id
    return gen if gen is not None and gen >= 0 else DEFAULT_GENERATION


def remove_first(items: list[TopicPartition], tp: TopicPartition) -> None:
    """Java ``List.remove(Object)``: drop the first occurrence, silently if absent."""
    # A plain try: contextlib.suppress costs more than a short list's remove itself.
    try:  # noqa: SIM105
        items.remove(tp)
    except ValueError:
        pass


def _all_unclaimed(
    parts: Sequence[TopicPartition], ppt: PartitionsPerTopic, claimant: dict[TopicPartition, str]
) -> bool:
    """Every partition distinct, of a known topic and not claimed yet: then each one is
    simply appended and claimed, in order."""
    return (
        len(set(parts)) == len(parts)
        and ppt.keys() >= set(map(itemgetter(0), parts))
        and claimant.keys().isdisjoint(parts)
    )


def _as_claimed(own: Ownership) -> dict[str, list[TopicPartition]]:
    """Each member's claims as its owned list, unsettled (in the owned map's order)."""
    owned: dict[str, list[TopicPartition]] = {member: [] for member in own.owned}
    for member, parts, _ in own.claims:
        owned[member].extend(parts)
    return owned


@dataclass(init=False)
class Ownership:
    """Result of step 0 (``allSubscriptionsEqual``)."""

    all_equal: bool = True
    owned: dict[str, list[TopicPartition]] = field(default_factory=dict)
    multi_owned: set[TopicPartition] = field(default_factory=set)
    data: dict[str, MemberData] = field(default_factory=dict)  # member_data as read, per member
    # Each claiming member's partitions and generation, in member order; ``owned`` holds them once settled.
    claims: list[tuple[str, tuple[TopicPartition, ...], int]] = field(default_factory=list)

    def __init__(self) -> None:
        # Written out: mypyc compiles this one, where the dataclass decorator's would be interpreted Python (one
        # per sticky assignment; see rebalance_lab.replay.generation.Member).
        self.all_equal = True
        self.owned = {}
        self.multi_owned = set()
        self.data = {}
        self.claims = []


class AbstractStickyAssignor(ABC):
    """Shared sticky algorithm. Instances keep ``max_generation`` across calls, as Java's
    field does (quirk Q4): reuse one instance per group, or a fresh one per assignment."""

    name: ClassVar[str]

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic
        self.max_generation = DEFAULT_GENERATION
        # Java's protected field: a map on the constrained path, None on the general path.
        self.partitions_transferring_ownership: dict[TopicPartition, str] | None = {}
        self._movements: PartitionMovements | None = None

    @abstractmethod
    def member_data(self, subscription: Subscription) -> MemberData:
        """Previously owned partitions and generation, as this flavour reads them."""

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]:
        with gc_paused() as sized:
            return wrap(group, self._lists(cluster, group, sized))

    def assign_lists(self, cluster: ClusterView, group: GroupSubscription) -> Mapping[str, Sequence[TopicPartition]]:
        """:meth:`assign` as each member's partition list, without the ``Assignment`` wrappers (a member
        may be missing: it gets nothing). The replay's what-if runs thousands of small assignments and
        reads the lists only. The lists are the caller's."""
        with gc_paused() as sized:
            return self._lists(cluster, group, sized)

    def _lists(self, cluster: ClusterView, group: GroupSubscription, sized: Callable[[int], None]) -> Lists:
        members = member_hash_order(group)
        topics = topic_metadata(cluster, group, members)
        sized(sum(map(len, topics.ids.values())))
        return self.assign_partitions(topics.partitions, group, members, partition_ids=topics.ids)

    def assign_partitions(
        self,
        ppt: PartitionsPerTopic,
        group: GroupSubscription,
        members: Sequence[str],
        *,
        partition_ids: PartitionIds | None = None,
    ) -> Lists:
        """``assignPartitions``; ``members`` in the leader's ``HashMap`` order. ``partition_ids``
        are ``ppt``'s ids if the caller has them already (read from ``ppt`` otherwise)."""
        ids = partition_ids_of(ppt) if partition_ids is None else partition_ids
        racks = RackInfo(ppt, group, members, self.prefer_rack_aware_logic)
        own = self._resolve_ownership(ppt, group, members, settle=False)
        if own.all_equal and not (racks.consumer_racks or racks.num_consumers_by_partition):
            # No rack anywhere: the int kernel, first on the claims as they are. It declines a partition claimed
            # twice or of an unknown topic, so when it answers they are what settling them gives (the fast case
            # of _settle_claims), without the sets that check costs.
            kernel = constrained_without_racks(ppt, ids, _as_claimed(own), set())
            if kernel is None:
                self._settle_claims(own.claims, ppt, group, own)
                kernel = constrained_without_racks(ppt, ids, own.owned, own.multi_owned)
            if kernel is not None:
                lists, self.partitions_transferring_ownership = kernel
                return lists
        else:
            self._settle_claims(own.claims, ppt, group, own)
        if own.all_equal:
            builder = ConstrainedBuilder(ppt, ids, racks, own.owned, own.multi_owned)
            self.partitions_transferring_ownership = builder.transferring
            return builder.build()
        # None tells the cooperative flavour to compute transfers from scratch.
        self.partitions_transferring_ownership = None
        prev = self._prev_assignment(group, members, own.data)
        general = GeneralBuilder(ppt, ids, racks, own.owned, group.members, members, prev)
        self._movements = general.movements
        return general.build()

    def is_sticky(self) -> bool:
        """Java ``isSticky()`` over the last general-path run (test helper)."""
        return self._movements is None or self._movements.is_sticky()

    def _resolve_ownership(
        self, ppt: PartitionsPerTopic, group: GroupSubscription, members: Sequence[str], settle: bool = True
    ) -> Ownership:
        """Subscription equality and claims: equal generations disqualify every claimant, a
        higher one wins. The claimant's generation is its *protocol* field (quirk Q2). With
        ``settle`` off the claims are left in ``claims`` and ``owned`` empty (:meth:`_settle_claims`)."""
        result = Ownership()
        topics: set[str] = set()
        matching: tuple[str, ...] | None = None  # the last subscription found equal to ``topics``
        claims = result.claims
        # consumerToOwnedPartitions is a fresh HashMap filled in subscriptions order.
        result.owned = {member: [] for member in string_hash_order(members)}
        subscriptions, read, member_data = group.members, result.data, self.member_data
        max_generation = self.max_generation  # kept in a local for the loop (member_data does not read it)
        for member in members:
            sub = subscriptions[member]
            if not topics:
                topics.update(sub.topics)  # "if empty", so an empty first subscription fixes nothing (Q1)
            elif result.all_equal and sub.topics != matching:
                if len(sub.topics) == len(topics) and topics.issuperset(sub.topics):
                    matching = sub.topics
                else:
                    result.all_equal = False
            data = read[member] = member_data(sub)
            generation = DEFAULT_GENERATION if data.generation is None else data.generation
            if generation > max_generation:
                max_generation = generation
            if data.partitions:
                claims.append((member, data.partitions, generation))
        self.max_generation = max_generation
        # The claims touch nothing but ``result``: settled after the loop, in member order as Java does.
        if settle:
            self._settle_claims(claims, ppt, group, result)
        return result

    def _settle_claims(
        self,
        claims: list[tuple[str, tuple[TopicPartition, ...], int]],
        ppt: PartitionsPerTopic,
        group: GroupSubscription,
        result: Ownership,
    ) -> None:
        claimed = list(chain.from_iterable(parts for _, parts, _ in claims))
        if len(set(claimed)) == len(claimed) and ppt.keys() >= set(map(itemgetter(0), claimed)):
            # No partition claimed twice, none of an unknown topic: every member simply owns its
            # claims (what the member-by-member walk below comes to then).
            for member, parts, _ in claims:
                result.owned[member].extend(parts)
            return
        claimant: dict[TopicPartition, str] = {}
        for member, parts, generation in claims:
            mine = result.owned[member]
            if _all_unclaimed(parts, ppt, claimant):  # the common case, in bulk
                mine.extend(parts)
                claimant.update(zip(parts, repeat(member)))
                continue
            for tp in parts:
                if tp.topic in ppt:
                    if tp not in claimant:  # the common case, inlined from _claim
                        mine.append(tp)
                        claimant[tp] = member
                    else:
                        self._claim(tp, member, generation, group, claimant, result)

    @staticmethod
    def _claim(
        tp: TopicPartition,
        member: str,
        generation: int,
        group: GroupSubscription,
        claimant: dict[TopicPartition, str],
        result: Ownership,
    ) -> None:
        other = claimant.get(tp)
        if other is None:
            result.owned[member].append(tp)
            claimant[tp] = member
            return
        other_generation = protocol_generation(group.members[other])
        if generation == other_generation:
            result.multi_owned.add(tp)
            remove_first(result.owned[other], tp)
            claimant[tp] = member
        elif generation > other_generation:
            result.owned[member].append(tp)
            remove_first(result.owned[other], tp)
            claimant[tp] = member
        # else: the other member keeps it

    def _prev_assignment(
        self, group: GroupSubscription, members: Sequence[str], read: dict[str, MemberData] | None = None
    ) -> dict[TopicPartition, PrevOwner]:
        """``prepopulateCurrentAssignments``: partitions of members below ``max_generation``
        (no generation counts as -1); a higher generation wins, ties keep the first seen."""
        prev: dict[TopicPartition, PrevOwner] = {}
        for member in members:
            # member_data is a pure function of the subscription: reuse what step 0 read.
            data = read[member] if read and member in read else self.member_data(group.members[member])
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in data.partitions:
                known = prev.get(tp)
                if known is None or generation > known.generation:
                    prev[tp] = PrevOwner(member, generation)
        return prev
