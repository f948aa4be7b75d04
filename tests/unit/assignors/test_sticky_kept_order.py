"""The constrained builder's kept-partition order (KAFKA-16277: partition number, then topic) on topics whose
Python ``str`` order is Java's: two stable sorts without a key tuple per partition (issue 20) must give exactly
what the Java-keyed sort gives, whatever order the owned lists come in."""

from __future__ import annotations

import random

import pytest

from rebalance_lab.clients.assignors import ClusterView, GroupSubscription, Subscription, TopicPartition
from rebalance_lab.clients.assignors.common import member_hash_order, topic_metadata
from rebalance_lab.clients.assignors.sticky_constrained import ConstrainedBuilder
from rebalance_lab.clients.assignors.sticky_racks import RackInfo


def _builder(rng: random.Random, native: bool) -> ConstrainedBuilder:
    """A group of 2-7 members on 1-4 topics, each member owning a shuffled share of the partitions."""
    rng_state = rng.getstate()
    topics = rng.sample(["a", "b", "orders", "orders-2", "pay", "z"], rng.randint(1, 4))
    counts = {t: rng.randint(1, 12) for t in topics}
    members = [f"m-{i}" for i in range(rng.randint(2, 7))]
    every = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    rng.shuffle(every)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp in every[: rng.randint(0, len(every))]:  # some partitions owned by nobody
        owned[rng.choice(members)].append(tp)
    group = GroupSubscription({m: Subscription(tuple(topics)) for m in members})
    order = member_hash_order(group)
    meta = topic_metadata(ClusterView.of_counts(counts), group, order)
    racks = RackInfo(meta.partitions, group, order, False)
    builder = ConstrainedBuilder(meta.partitions, meta.ids, racks, {m: owned[m] for m in order}, set())
    assert builder.native
    builder.native = native  # False: the Java-keyed sort, the reference
    rng.setstate(rng_state)
    return builder


@pytest.mark.parametrize("seed", range(300))
def test_native_kept_order_gives_the_java_keyed_sorts_assignment(seed: int) -> None:
    fast = _builder(random.Random(seed), native=True)
    reference = _builder(random.Random(seed), native=False)
    assert fast.build() == reference.build()
    assert fast.transferring == reference.transferring
    assert fast.maybe_revoked == reference.maybe_revoked


def test_kept_partitions_are_ordered_by_partition_then_topic_from_any_owned_order() -> None:
    owned = [TopicPartition("b", 0), TopicPartition("a", 1), TopicPartition("b", 1), TopicPartition("a", 0)]
    group = GroupSubscription({"m": Subscription(("a", "b"))})
    meta = topic_metadata(ClusterView.of_counts({"a": 2, "b": 2}), group, ["m"])
    builder = ConstrainedBuilder(meta.partitions, meta.ids, RackInfo(meta.partitions, group, ["m"], False),
                                 {"m": owned}, set())
    assert builder.build() == {"m": [TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("a", 1),
                                     TopicPartition("b", 1)]}
