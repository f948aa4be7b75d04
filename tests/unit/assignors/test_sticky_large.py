"""Kafka's large sticky tests (spec assignors.md §6.6 cases 53-57, §6.10), scaled to keep a
pure-Python unit run short: each asserts validity, balance and stickiness within a time budget."""

from __future__ import annotations

import random
import time

import pytest
from assignor_support import sub
from sticky_support import FLAVOURS, StickyHarness, check_validity_and_balance, is_fully_balanced

from rebalance_lab.clients.assignors import (
    AbstractStickyAssignor,
    ClusterView,
    CooperativeStickyAssignor,
    GroupSubscription,
    Subscription,
)


def _owning_round(
    flavour: type[AbstractStickyAssignor], view: ClusterView, members: dict[str, Subscription]
) -> dict[str, list]:  # type: ignore[type-arg]
    result = flavour().assign(view, GroupSubscription(members))
    return {m: list(a.partitions) for m, a in result.items()}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("unequal", [False, True], ids=["uniform", "one-unequal-consumer"])
def test_large_assignment_and_group(flavour: type[AbstractStickyAssignor], unequal: bool) -> None:
    """Cases 53/54 at 1/100 scale: 200 consumers, 50 topics x 200 partitions (10,000)."""
    topics = [f"topic-{i}" for i in range(50)]
    view = ClusterView.of_counts(dict.fromkeys(topics, 200))
    members = {f"consumer-{i}": sub(topics) for i in range(200)}
    if unequal:
        members["consumer-199"] = sub(topics[:1])
    start = time.perf_counter()
    first = _owning_round(flavour, view, members)
    h = StickyHarness(flavour)
    again = {m: (s if m == "consumer-0" else h.v2(list(s.topics), first[m], 1, -1)) for m, s in members.items()}
    second = _owning_round(flavour, view, again)
    elapsed = time.perf_counter() - start
    check_validity_and_balance(members, second)
    if not unequal:
        assert is_fully_balanced(second)
    assert elapsed < 20, f"took {elapsed:.1f}s"


def test_assignment_and_group_with_non_equal_subscription_not_timeout() -> None:
    """Case 55 at full scale: 500 consumers, 100 topics x 200 partitions (20,000); consumers
    with i % 4 == 0 take the first half of the topics, the others the second half."""
    topics = [f"topic-{i}" for i in range(100)]
    view = ClusterView.of_counts(dict.fromkeys(topics, 200))
    members = {f"consumer-{i}": sub(topics[:50] if i % 4 == 0 else topics[50:]) for i in range(500)}
    start = time.perf_counter()
    result = _owning_round(CooperativeStickyAssignor, view, members)
    again = {m: sub(list(s.topics), result[m], gen=1) for m, s in members.items()}
    check_validity_and_balance(members, _owning_round(CooperativeStickyAssignor, view, again))
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(
    flavour: type[AbstractStickyAssignor],
) -> None:
    """Case 57: 40 topics with 1-10 partitions, 200 consumers with random (possibly
    duplicated) topic picks, then 50 random consumers leave; valid and sticky."""
    rng = random.Random(57)
    topics = [f"t{i}" for i in range(40)]
    view = ClusterView.of_counts({t: rng.randint(1, 10) for t in topics})
    members = {f"c{i:03d}": sub([rng.choice(topics) for _ in range(rng.randint(1, 20))]) for i in range(200)}
    h = StickyHarness(flavour)
    h.subscriptions.update(members)
    first = h.verify_validity_and_balance(view, h.assign(view))
    for member in rng.sample(sorted(members), 50):
        del h.subscriptions[member]
    for member, sub_ in list(h.subscriptions.items()):
        h.subscriptions[member] = h.v2(list(sub_.topics), first[member], 1, -1)
    start = time.perf_counter()
    second = h.verify_validity_and_balance(view, h.assign(view))
    assert time.perf_counter() - start < 20
    assert h.assignor.is_sticky()
    del second


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_reassignment_after_one_consumer_leaves(flavour: type[AbstractStickyAssignor]) -> None:
    """Case 50: topic i has i partitions (19 topics), consumer i subscribes topics 1..i."""
    view = ClusterView.of_counts({f"topic{i:02d}": i for i in range(1, 20)})
    h = StickyHarness(flavour)
    for i in range(1, 20):
        h.subscriptions[f"consumer{i:02d}"] = sub([f"topic{j:02d}" for j in range(1, i + 1)])
    first = h.verify_validity_and_balance(view, h.assign(view))
    for member, sub_ in list(h.subscriptions.items()):
        h.subscriptions[member] = h.v2(list(sub_.topics), first[member], 1, -1)
    del h.subscriptions["consumer10"]
    h.verify_validity_and_balance(view, h.assign(view))
    assert h.assignor.is_sticky()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_reassignment_with_random_subscriptions_and_changes(flavour: type[AbstractStickyAssignor]) -> None:
    """Case 58 (last): rounds of random subscriptions over 10-19 topics and 20-39 consumers."""
    rng = random.Random(58)
    for _ in range(10):
        topics = [f"topic{i:02d}" for i in range(rng.randint(10, 19))]
        view = ClusterView.of_counts({t: i + 1 for i, t in enumerate(topics)})
        consumers = [f"consumer{i:02d}" for i in range(rng.randint(20, 39))]
        h = StickyHarness(flavour)
        for c in consumers:
            h.subscriptions[c] = sub(rng.sample(topics, rng.randint(1, len(topics))))
        first = h.verify_validity_and_balance(view, h.assign(view))
        for c in consumers:
            h.subscriptions[c] = h.v2(rng.sample(topics, rng.randint(1, len(topics))), first[c], 1, -1)
        h.verify_validity_and_balance(view, h.assign(view))
        assert h.assignor.is_sticky()
