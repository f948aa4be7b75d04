"""The ``AbstractStickyAssignorTest`` harness: one assignor reused across rounds, Kafka's
``buildSubscriptionV2Above`` per flavour, and the cooperative convergence loop (spec §6.2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from assignor_support import ALL_RACKS, rack_cluster, sub, tps

from rebalance_lab.clients.assignors import (
    AbstractStickyAssignor,
    ClusterView,
    CooperativeStickyAssignor,
    GroupSubscription,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from rebalance_lab.protocol.consumer_protocol import encode_cooperative_user_data, encode_sticky_user_data

RACK_CONFIGS = ["NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK"]
GENERATION = 1  # AbstractStickyAssignorTest.generationId

Lists = dict[str, list[TopicPartition]]


@dataclass
class StickyHarness:
    flavour: type[AbstractStickyAssignor]
    rack_config: str = "NO_CONSUMER_RACK"
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # initializeRacks: rf 3, 3 broker racks unless NO_BROKER_RACK, preferRackAwareLogic on.
        self.assignor = self.flavour(prefer_rack_aware_logic=True)
        self.broker_racks = 0 if self.rack_config == "NO_BROKER_RACK" else 3
        self.consumer_racks = self.rack_config != "NO_CONSUMER_RACK"

    @property
    def cooperative(self) -> bool:
        return self.flavour is CooperativeStickyAssignor

    def cluster(self, topic_counts: Mapping[str, int]) -> ClusterView:
        # partitionInfos: the node index advances by one per topic.
        return rack_cluster(topic_counts, rf=3, num_broker_racks=self.broker_racks, next_node_step="one")

    def rack(self, index: int) -> str | None:
        if not self.consumer_racks or index < 0:
            return None
        return ALL_RACKS[index % (self.broker_racks or len(ALL_RACKS))]

    def plain(self, topics: str, index: int) -> Subscription:
        """``subscription(topics, i)``: no ownership, generation -1, the consumer's rack."""
        return sub(topics, rack=self.rack(index))

    def v2(
        self, topics: str | Sequence[str], owned: str | Sequence[TopicPartition], gen: int, index: int
    ) -> Subscription:
        """``buildSubscriptionV2Above``: cooperative = owned + protocol generation + rack;
        eager = V1 user data (owned, gen) + owned + protocol generation, no rack."""
        owned_tps = tps(owned) if isinstance(owned, str) else tuple(owned)
        if self.cooperative:
            return sub(topics, owned_tps, gen=gen, rack=self.rack(index), user_data=encode_cooperative_user_data(-1))
        return sub(topics, owned_tps, gen=gen, user_data=encode_sticky_user_data(owned_tps, gen))

    def assign(self, view: ClusterView) -> Lists:
        result = self.assignor.assign(view, GroupSubscription(dict(self.subscriptions)))
        return {m: list(a.partitions) for m, a in result.items()}

    def verify_validity_and_balance(self, view: ClusterView, assignment: Lists) -> Lists:
        """Cooperative: re-run (owned := last result, generation 1) until nothing is revoked,
        at most 4 rounds, like the Java override; then the base validity checks."""
        rounds = 0
        while self.cooperative and _revoking(self.subscriptions, assignment):
            for member, partitions in assignment.items():
                old = self.subscriptions[member]
                index = ALL_RACKS.index(old.rack_id) if old.rack_id else -1
                self.subscriptions[member] = self.v2(old.topics, partitions, GENERATION, index)
            assignment = self.assign(view)
            rounds += 1
            assert rounds <= 4
        check_validity_and_balance(self.subscriptions, assignment)
        return assignment


def _revoking(subs: Mapping[str, Subscription], assignment: Lists) -> bool:
    """``verifyCooperativeValidity``: nothing is given to a new owner in the round it is
    revoked; true while some partition is being revoked (another rebalance follows)."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        owned = set(subs[member].owned_partitions)
        revoked |= owned - set(partitions)
        added |= set(partitions) - owned
    assert not added & revoked, f"assigned in the round they are revoked: {added & revoked}"
    return bool(revoked)


def check_validity_and_balance(subs: Mapping[str, Subscription], assignment: Lists) -> None:
    """Each partition subscribed by its owner and given once; a member with two or more
    partitions fewer than another is not subscribed to any topic that other one holds."""
    seen: set[TopicPartition] = set()
    for member, partitions in assignment.items():
        for tp in partitions:
            assert tp.topic in subs[member].topics, f"{member} got {tp} without subscribing"
            assert tp not in seen, f"{tp} assigned twice"
            seen.add(tp)
    for small, small_list in assignment.items():
        for big, big_list in assignment.items():
            if len(small_list) < len(big_list) - 1:
                shared = {tp.topic for tp in big_list} & set(subs[small].topics)
                assert not shared, f"{small} ({len(small_list)}) could take {shared} from {big} ({len(big_list)})"


def is_fully_balanced(assignment: Lists) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


FLAVOURS = [StickyAssignor, CooperativeStickyAssignor]
