"""The what-if's shortcuts over the orders and values it writes (issue 20 performance) match the plain definitions."""

from __future__ import annotations

import random
from dataclasses import fields

from rebalance_lab.clients.assignors.common import topic_partition_key
from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.replay.whatif import _subscription, _wire_order

# "\ue000" sorts after "\U00010000" in Java (UTF-16 code units: 0xE000 > 0xD800) and before it in Python (code points).
TOPICS = ("a", "b", "orders", "\ue000", "\U00010000", "\U00010000x")


def _random_owned(rng: random.Random) -> tuple[TopicPartition, ...]:
    topics = rng.sample(TOPICS, rng.randint(1, 3))
    parts = {TopicPartition(rng.choice(topics), rng.randrange(12)) for _ in range(rng.randint(0, 9))}
    return tuple(rng.sample(sorted(parts), len(parts)))


def test_owned_partitions_are_written_in_javas_topic_then_partition_order_over_any_topics() -> None:
    rng = random.Random(20)
    for _ in range(2000):
        owned = _random_owned(rng)
        assert _wire_order(owned) == tuple(sorted(owned, key=topic_partition_key)), owned


def test_one_topic_is_ordered_by_partition_id_even_where_pythons_string_order_is_not_javas() -> None:
    owned = (TopicPartition("\U00010000", 10), TopicPartition("\U00010000", 2), TopicPartition("\U00010000", 0))
    assert _wire_order(owned) == tuple(sorted(owned, key=topic_partition_key))
    mixed = (TopicPartition("\U00010000", 1), TopicPartition("\ue000", 0))
    assert _wire_order(mixed) == mixed  # Java's order, not Python's


def test_a_subscription_with_owned_partitions_is_the_one_its_constructor_makes() -> None:
    owned = (TopicPartition("a", 0), TopicPartition("b", 3))
    for args in ((("a", "b"), b"\x00\x00\x00\x07", owned, 7, "r1", "i-1"), (("a",), None, owned[:1], None, None, None)):
        made = _subscription(*args)
        expected = Subscription(*args)
        assert made == expected and hash(made) == hash(expected)
        assert vars(made) == vars(expected)
        assert [getattr(made, f.name) for f in fields(Subscription)] == list(args)
