"""The int kernel of the constrained sticky builder (``sticky_kernel``, issue 20) against the port it stands for.

Seeded random groups: 1-12 members with equal subscriptions and no racks, 1-4 topics of 1-60 partitions, owned
partitions drawn at random (conflicts between members, stale and missing generations, partitions of unknown topics
and past a topic's count), both flavours. The kernel must give the port's ``ConstrainedBuilder`` result, key order
and transfers included, or decline (``None``) -- and decline rarely, or this would compare nothing.
"""

from __future__ import annotations

import random

import pytest
from assignor_support import sub

from rebalance_lab.clients.assignors import (
    AbstractStickyAssignor,
    ClusterView,
    CooperativeStickyAssignor,
    GroupSubscription,
    StickyAssignor,
    TopicPartition,
)
from rebalance_lab.clients.assignors.abstract_sticky import remove_first
from rebalance_lab.clients.assignors.common import member_hash_order, topic_metadata
from rebalance_lab.clients.assignors.sticky_constrained import ConstrainedBuilder
from rebalance_lab.clients.assignors.sticky_kernel import constrained_without_racks
from rebalance_lab.clients.assignors.sticky_racks import RackInfo
from rebalance_lab.protocol.consumer_protocol import encode_cooperative_user_data, encode_sticky_user_data

CASES = 1500  # per flavour and seed block
TOPIC_NAMES = ("t", "topic", "a1", "b", "zz", "T2", "\u00e9t", "\ufb01x", "\U0001f600s")
MEMBER_PREFIXES = ("c", "consumer-", "m", "\ufb01", "\U0001f600")  # the last two order differently in Java


def _random_group(rng: random.Random, cooperative: bool) -> tuple[ClusterView, GroupSubscription]:
    topics = rng.sample(TOPIC_NAMES, rng.randint(1, 4))
    counts = {t: rng.randint(1, 60) for t in topics}
    n = rng.randint(1, 12)
    members = [f"{rng.choice(MEMBER_PREFIXES)}{rng.randint(0, 99)}-{i}" for i in range(n)]
    rng.shuffle(members)
    every = [TopicPartition(t, i) for t, c in counts.items() for i in range(c)]
    owned_share = rng.choice((0.0, 0.3, 1.0, 1.0, 1.3))  # 0: a fresh group, > 1: claims overlap
    subs = {}
    for member in members:
        owned: list[TopicPartition] = []
        if owned_share and rng.random() < 0.9:
            owned = rng.sample(every, min(len(every), int(len(every) * owned_share / n) + rng.randint(0, 2)))
        if rng.random() < 0.01:  # a partition past the topic's count, or of a topic nobody subscribes to
            owned.append(TopicPartition(rng.choice(topics), counts[topics[0]] + rng.randint(0, 3)))
        if rng.random() < 0.05:
            owned.append(TopicPartition("gone", 0))
        if rng.random() < 0.02 and owned:
            owned.append(owned[0])  # listed twice by one member
        gen = rng.choice((None, -1, 1, 2, 3, 3, 3))
        order = rng.sample(topics, len(topics))  # equal subscriptions, in any order
        if cooperative:
            subs[member] = sub(order, owned, gen=gen, user_data=encode_cooperative_user_data(rng.choice((-1, 2))))
        else:
            data = encode_sticky_user_data(tuple(owned), gen) if owned or gen is not None else None
            subs[member] = sub(order, user_data=data)
    return ClusterView.of_counts(counts), GroupSubscription(subs)


def _port_and_kernel(
    flavour: type[AbstractStickyAssignor], view: ClusterView, group: GroupSubscription
) -> tuple[object, object]:
    assignor = flavour()
    members = member_hash_order(group)
    meta = topic_metadata(view, group, members)
    own = assignor._resolve_ownership(meta.partitions, group, members)
    assert own.all_equal
    racks = RackInfo(meta.partitions, group, members, False)
    builder = ConstrainedBuilder(meta.partitions, meta.ids, racks, own.owned, own.multi_owned)
    try:
        port: object = (builder.build(), builder.transferring)
    except Exception as exc:  # the port's IllegalStateException: the kernel must decline then
        port = repr(exc)
    kernel = constrained_without_racks(meta.partitions, meta.ids, own.owned, own.multi_owned)
    return port, kernel


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("flavour", [StickyAssignor, CooperativeStickyAssignor])
def test_the_kernel_gives_the_constrained_builders_assignment_and_transfers_or_declines(
    flavour: type[AbstractStickyAssignor], seed: int
) -> None:
    rng = random.Random(seed * 1000 + (flavour is CooperativeStickyAssignor))
    answered = 0
    for case in range(CASES):
        view, group = _random_group(rng, flavour is CooperativeStickyAssignor)
        port, kernel = _port_and_kernel(flavour, view, group)
        if kernel is None:
            continue
        answered += 1
        assert isinstance(port, tuple), (case, port)
        assert list(kernel[0].items()) == list(port[0].items()), case  # same lists, same key order
        assert kernel[1] == port[1], case
    assert answered >= CASES * 0.85


@pytest.mark.parametrize("flavour", [StickyAssignor, CooperativeStickyAssignor])
def test_the_assignor_with_the_kernel_gives_what_the_port_alone_gives(flavour: type[AbstractStickyAssignor]) -> None:
    rng = random.Random(77 + (flavour is CooperativeStickyAssignor))
    for case in range(CASES):
        view, group = _random_group(rng, flavour is CooperativeStickyAssignor)
        port, _ = _port_and_kernel(flavour, view, group)
        try:
            got: object = dict(flavour().assign_lists(view, group))
        except Exception as exc:
            got = repr(exc)
        if isinstance(port, tuple):
            lists, transferring = port
            if flavour is CooperativeStickyAssignor:
                for tp, consumer in transferring.items():
                    remove_first(lists[consumer], tp)
            port = lists
        assert got == port, case


def test_the_kernel_declines_an_owned_partition_past_its_topics_count() -> None:
    """Java's merge walk stalls on it (the port reproduces that): not the kernel's to answer."""
    view = ClusterView.of_counts({"t": 3})
    group = GroupSubscription({"a": sub("t", [TopicPartition("t", 5)], gen=1), "b": sub("t", gen=1)})
    port, kernel = _port_and_kernel(CooperativeStickyAssignor, view, group)
    assert kernel is None
    assert isinstance(port, tuple)
