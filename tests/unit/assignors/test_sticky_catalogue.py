"""``AbstractStickyAssignorTest`` (cases 36-64), run for both sticky flavours and all three
rack configurations, as Kafka does (spec assignors.md §6.6)."""

from __future__ import annotations

import itertools

import pytest
from assignor_support import null_racks, racks, tps, verify_rack_assignment
from sticky_support import FLAVOURS, GENERATION, RACK_CONFIGS, StickyHarness, is_fully_balanced

from rebalance_lab.clients.assignors import AbstractStickyAssignor, CooperativeStickyAssignor, TopicPartition


@pytest.fixture(params=list(itertools.product(FLAVOURS, RACK_CONFIGS)), ids=lambda p: f"{p[0].name}-{p[1]}")
def h(request: pytest.FixtureRequest) -> StickyHarness:
    flavour, rack_config = request.param
    return StickyHarness(flavour, rack_config)


def L(text: str) -> list[TopicPartition]:
    return list(tps(text))


def test_one_consumer_no_topic(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("", 0)
    assert h.assign(h.cluster({})) == {"consumer": []}
    assert h.assignor.partitions_transferring_ownership == {}


def test_one_consumer_nonexistent_topic(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("topic", 0)
    assert h.assign(h.cluster({"topic": 0})) == {"consumer": []}


def test_one_consumer_one_topic(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("topic", 0)
    assert h.assign(h.cluster({"topic": 3})) == {"consumer": L("topic-0 topic-1 topic-2")}


def test_only_assigns_partitions_from_subscribed_topics(h: StickyHarness) -> None:
    view = h.cluster({"topic": 3, "other": 3})
    h.subscriptions["consumer"] = h.v2("topic", "topic-0 topic-1 other-0 other-1", GENERATION, 0)
    assert h.assign(view) == {"consumer": L("topic-0 topic-1 topic-2")}


def test_one_consumer_multiple_topics(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("topic1 topic2", 0)
    assert h.assign(h.cluster({"topic1": 1, "topic2": 2})) == {"consumer": L("topic1-0 topic2-0 topic2-1")}


@pytest.mark.parametrize(("n", "c1", "c2"), [(1, "topic-0", ""), (2, "topic-0", "topic-1")])
def test_two_consumers_one_topic(h: StickyHarness, n: int, c1: str, c2: str) -> None:
    h.subscriptions.update(consumer1=h.plain("topic", 0), consumer2=h.plain("topic", 1))
    assert h.assign(h.cluster({"topic": n})) == {"consumer1": L(c1), "consumer2": L(c2)}


def test_multiple_consumers_mixed_topic_subscriptions(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 3, "topic2": 2})
    h.subscriptions.update(
        consumer1=h.plain("topic1", 0), consumer2=h.plain("topic1 topic2", 1), consumer3=h.plain("topic1", 2)
    )
    assert h.assign(view) == {
        "consumer1": L("topic1-0 topic1-2"),
        "consumer2": L("topic2-0 topic2-1"),
        "consumer3": L("topic1-1"),
    }
    assert h.assignor.partitions_transferring_ownership is None  # general path


def test_two_consumers_two_topics_six_partitions(h: StickyHarness) -> None:
    h.subscriptions.update(consumer1=h.plain("topic1 topic2", 0), consumer2=h.plain("topic1 topic2", 1))
    assert h.assign(h.cluster({"topic1": 3, "topic2": 3})) == {
        "consumer1": L("topic1-0 topic1-2 topic2-1"),
        "consumer2": L("topic1-1 topic2-0 topic2-2"),
    }


def test_consumer_owning_min_quota_expected_max_quota(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 2, "topic2": 3})
    h.subscriptions.update(
        consumer1=h.v2("topic1 topic2", "topic1-0 topic2-1", GENERATION, 0),
        consumer2=h.v2("topic1 topic2", "topic1-1 topic2-2", GENERATION, 1),
    )
    assignment = h.assign(view)
    assert assignment == {"consumer1": L("topic1-0 topic2-1 topic2-0"), "consumer2": L("topic1-1 topic2-2")}
    assert h.assignor.partitions_transferring_ownership == {}
    assert is_fully_balanced(h.verify_validity_and_balance(view, assignment))


def test_max_quota_consumer_more_than_num_expected_max_capacity_members(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 2, "topic2": 2})
    h.subscriptions.update(
        consumer1=h.v2("topic1 topic2", "topic1-0 topic2-0", GENERATION, 0),
        consumer2=h.v2("topic1 topic2", "topic1-1 topic2-1", GENERATION, 1),
        consumer3=h.v2("topic1 topic2", "", GENERATION, 2),
    )
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {TopicPartition("topic2", 0): "consumer3"}
    assignment = h.verify_validity_and_balance(view, assignment)
    assert assignment == {
        "consumer1": L("topic1-0"),
        "consumer2": L("topic1-1 topic2-1"),
        "consumer3": L("topic2-0"),
    }


def test_all_consumers_are_under_min_quota(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 2, "topic2": 3})
    h.subscriptions.update(
        consumer1=h.v2("topic1 topic2", "topic1-0", GENERATION, 0),
        consumer2=h.v2("topic1 topic2", "topic1-1", GENERATION, 1),
        consumer3=h.v2("topic1 topic2", "", GENERATION, 2),
    )
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {}
    assert h.verify_validity_and_balance(view, assignment) == {
        "consumer1": L("topic1-0 topic2-1"),
        "consumer2": L("topic1-1 topic2-2"),
        "consumer3": L("topic2-0"),
    }


def test_add_remove_consumer_one_topic(h: StickyHarness) -> None:
    view = h.cluster({"topic": 3})
    h.subscriptions["consumer1"] = h.plain("topic", 0)
    assignment = h.assign(view)
    assert assignment == {"consumer1": L("topic-0 topic-1 topic-2")}

    h.subscriptions["consumer1"] = h.v2("topic", assignment["consumer1"], GENERATION, 0)
    h.subscriptions["consumer2"] = h.v2("topic", "", GENERATION, 1)
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {TopicPartition("topic", 2): "consumer2"}
    assignment = h.verify_validity_and_balance(view, assignment)
    assert assignment == {"consumer1": L("topic-0 topic-1"), "consumer2": L("topic-2")}

    del h.subscriptions["consumer1"]
    h.subscriptions["consumer2"] = h.v2("topic", assignment["consumer2"], GENERATION, 1)
    assignment = h.assign(view)
    assert set(assignment["consumer2"]) == set(L("topic-0 topic-1 topic-2"))
    assert h.assignor.partitions_transferring_ownership == {}


def test_topic_balance_after_reassignment(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 12, "topic2": 12})
    topics = "topic1 topic2"

    def per_topic_share(assignment: dict[str, list[TopicPartition]], share: int) -> None:
        for partitions in assignment.values():
            assert sum(tp.topic == "topic1" for tp in partitions) == share
            assert sum(tp.topic == "topic2" for tp in partitions) == share

    h.subscriptions["consumer1"] = h.plain(topics, 0)
    assignment = h.verify_validity_and_balance(view, h.assign(view))
    per_topic_share(assignment, 12)
    for step, share in [(["consumer2"], 6), (["consumer3", "consumer4"], 3)]:
        for i, member in enumerate(list(h.subscriptions)):
            h.subscriptions[member] = h.v2(topics, assignment[member], GENERATION, i)
        for member in step:
            h.subscriptions[member] = h.v2(topics, "", GENERATION, int(member[-1]) - 1)
        assignment = h.verify_validity_and_balance(view, h.assign(view))
        per_topic_share(assignment, share)
    for member in ["consumer1", "consumer2"]:
        del h.subscriptions[member]
    for member in ["consumer3", "consumer4"]:
        h.subscriptions[member] = h.v2(topics, assignment[member], GENERATION, int(member[-1]) - 1)
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {}
    per_topic_share(h.verify_validity_and_balance(view, assignment), 6)


def test_add_remove_two_consumers_two_topics(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 3, "topic2": 4})
    topics = "topic1 topic2"
    h.subscriptions.update(consumer1=h.plain(topics, 0), consumer2=h.plain(topics, 1))
    assignment = h.assign(view)
    assert assignment == {
        "consumer1": L("topic1-0 topic1-2 topic2-1 topic2-3"),
        "consumer2": L("topic1-1 topic2-0 topic2-2"),
    }
    h.subscriptions.update(
        consumer1=h.v2(topics, assignment["consumer1"], GENERATION, 0),
        consumer2=h.v2(topics, assignment["consumer2"], GENERATION, 1),
        consumer3=h.v2(topics, "", GENERATION, 2),
        consumer4=h.v2(topics, "", GENERATION, 3),
    )
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {
        TopicPartition("topic1", 2): "consumer3",
        TopicPartition("topic2", 3): "consumer3",
        TopicPartition("topic2", 2): "consumer4",
    }
    assignment = h.verify_validity_and_balance(view, assignment)
    assert assignment == {
        "consumer1": L("topic1-0 topic2-1"),
        "consumer2": L("topic2-0 topic1-1"),
        "consumer3": L("topic1-2 topic2-3"),
        "consumer4": L("topic2-2"),
    }
    del h.subscriptions["consumer1"], h.subscriptions["consumer2"]
    h.subscriptions.update(
        consumer3=h.v2(topics, assignment["consumer3"], GENERATION, 2),
        consumer4=h.v2(topics, assignment["consumer4"], GENERATION, 3),
    )
    assignment = h.assign(view)
    # Exact list order: kept partitions first (partition, then topic), then new ones.
    assert assignment == {
        "consumer3": L("topic1-2 topic2-3 topic1-0 topic2-1"),
        "consumer4": L("topic2-2 topic1-1 topic2-0"),
    }
    assert h.assignor.partitions_transferring_ownership == {}


def test_all_consumers_reach_expected_quota_and_are_considered_filled(h: StickyHarness) -> None:
    view = h.cluster({"topic": 4})
    h.subscriptions.update(
        consumer1=h.v2("topic", "topic-0 topic-1", GENERATION, 0),
        consumer2=h.v2("topic", "topic-2", GENERATION, 1),
        consumer3=h.v2("topic", "", GENERATION, 2),
    )
    assert h.assign(view) == {"consumer1": L("topic-0 topic-1"), "consumer2": L("topic-2"), "consumer3": L("topic-3")}
    assert h.assignor.partitions_transferring_ownership == {}


@pytest.mark.parametrize("stale_generation", [9, -1], ids=["stale", "none"])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_or_no_generation(
    h: StickyHarness, stale_generation: int
) -> None:
    view = h.cluster({"topic": 3, "topic2": 3})
    owned = "topic-0 topic-2 topic2-1"
    h.subscriptions.update(
        consumer1=h.v2("topic topic2", owned, 10, 0), consumer2=h.v2("topic topic2", owned, stale_generation, 1)
    )
    assignment = h.assign(view)
    assert set(assignment["consumer1"]) == set(L(owned))
    assert set(assignment["consumer2"]) == set(L("topic-1 topic2-0 topic2-2"))
    assert h.assignor.partitions_transferring_ownership == {}


def test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers(
    h: StickyHarness,
) -> None:
    view = h.cluster({"topic": 3})
    h.subscriptions.update(
        consumer1=h.v2("topic", "topic-0 topic-1", GENERATION, 0),
        consumer2=h.v2("topic", "topic-0 topic-2", GENERATION, 1),
        consumer3=h.v2("topic", "", GENERATION, 2),
    )
    assignment = h.assign(view)
    assert h.assignor.partitions_transferring_ownership == {TopicPartition("topic", 0): "consumer3"}
    assert h.verify_validity_and_balance(view, assignment) == {
        "consumer1": L("topic-1"),
        "consumer2": L("topic-2"),
        "consumer3": L("topic-0"),
    }


def test_ensure_partitions_assigned_to_highest_generation(h: StickyHarness) -> None:
    view = h.cluster({"topic": 3, "topic2": 3, "topic3": 3})
    topics = "topic topic2 topic3"
    h.subscriptions.update(
        consumer1=h.v2(topics, "topic-0 topic2-0 topic3-0", 10, 0),
        consumer2=h.v2(topics, "topic-1 topic2-1 topic3-1", 9, 1),
        consumer3=h.v2(topics, "topic2-1 topic3-0 topic3-2", 8, 1),
    )
    assignment = h.assign(view)
    assert {m: set(v) for m, v in assignment.items()} == {
        "consumer1": set(L("topic-0 topic2-0 topic3-0")),
        "consumer2": set(L("topic-1 topic2-1 topic3-1")),
        "consumer3": set(L("topic-2 topic2-2 topic3-2")),
    }
    assert h.assignor.partitions_transferring_ownership == {}


def test_no_reassignment_on_current_members(h: StickyHarness) -> None:
    view = h.cluster({"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3})
    topics = "topic topic2 topic3 topic1"
    h.subscriptions.update(
        consumer1=h.v2(topics, "", -1, 0),
        consumer2=h.v2(topics, "topic-0 topic2-0 topic1-0", 9, 1),
        consumer3=h.v2(topics, "topic3-2 topic2-2 topic1-1", 8, 2),
        consumer4=h.v2(topics, "topic3-1 topic-1 topic-2", 7, 3),
    )
    assignment = h.assign(view)
    assert set(assignment["consumer1"]) == set(L("topic1-2 topic2-1 topic3-0"))
    assert h.assignor.partitions_transferring_ownership == {}


def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(h: StickyHarness) -> None:
    view = h.cluster({"topic": 3, "topic2": 3})
    h.subscriptions.update(
        consumer1=h.v2("topic topic2", "topic-0 topic2-1 topic-1", 10, 0),
        consumer2=h.v2("topic topic2", "topic-0 topic2-1 topic2-2", 8, 1),
    )
    assignment = h.assign(view)
    assert set(assignment["consumer1"]) == set(L("topic-0 topic2-1 topic-1"))
    assert set(assignment["consumer2"]) == set(L("topic-2 topic2-2 topic2-0"))
    assert h.assignor.partitions_transferring_ownership == {}


def test_stickiness_when_a_consumer_leaves(h: StickyHarness) -> None:
    view = h.cluster({"topic1": 3})
    for i in range(1, 5):
        h.subscriptions[f"consumer{i}"] = h.plain("topic1", i - 1)
    assignment = h.assign(view)
    owners = {tp: m for m, partitions in assignment.items() for tp in partitions}
    del h.subscriptions["consumer1"]
    for i, member in enumerate(list(h.subscriptions), start=1):
        h.subscriptions[member] = h.v2("topic1", assignment[member], GENERATION, i)
    assignment = h.verify_validity_and_balance(view, h.assign(view))
    for member, partitions in assignment.items():
        assert len(partitions) <= 1
        for tp in partitions:
            assert owners[tp] in (member, "consumer1")


def test_assignment_updated_for_deleted_topic(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("topic1 topic2 topic3", 0)
    assignment = h.assign(h.cluster({"topic1": 1, "topic3": 100}))
    assert len(assignment["consumer"]) == 101


def test_no_exception_thrown_when_only_subscribed_topic_deleted(h: StickyHarness) -> None:
    h.subscriptions["consumer"] = h.plain("topic", 0)
    assignment = h.assign(h.cluster({"topic": 3}))
    h.subscriptions["consumer"] = h.v2("topic", assignment["consumer"], GENERATION, 0)
    assert h.assign(h.cluster({})) == {"consumer": []}


# ------------------------------------------------------------------ rack-aware (cases 63-64)

T3 = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = [["t1", "t2", "t3"]] * 3


def _verify_twice(
    a: AbstractStickyAssignor,
    rf: int,
    brokers: list[str | None],
    consumers: list[str | None],
    subs: list[list[str]],
    exp: list[str],
    mis: int,
) -> None:
    """``verifyUniformSubscription``/``verifyNonEqualSubscription``: fresh, then owning the result."""
    verify_rack_assignment(a, T3, rf, brokers, consumers, subs, exp, mis)
    verify_rack_assignment(a, T3, rf, brokers, consumers, subs, exp, mis, owned=exp)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_rack_aware_sticky_with_uniform_subscription(flavour: type[AbstractStickyAssignor]) -> None:
    a = flavour()
    plain = ["t1-0 t1-3 t2-0 t2-3 t2-6", "t1-1 t1-4 t2-1 t2-4 t3-0", "t1-2 t1-5 t2-2 t2-5 t3-1"]
    _verify_twice(a, 3, null_racks(3), racks(3), ALL3, plain, -1)
    _verify_twice(a, 3, racks(3), null_racks(3), ALL3, plain, -1)
    a.prefer_rack_aware_logic = True
    _verify_twice(a, 3, racks(3), racks(3), ALL3, plain, 0)
    _verify_twice(a, 4, racks(4), racks(3), ALL3, plain, 0)
    a.prefer_rack_aware_logic = False
    _verify_twice(a, 3, racks(3), racks(3), ALL3, plain, 0)
    _verify_twice(a, 3, racks(3), ["d", "e", "f"], ALL3, plain, -1)
    _verify_twice(a, 3, racks(3), [None, "e", "f"], ALL3, plain, -1)
    _verify_twice(a, 1, racks(3), racks(3), ALL3, plain, 0)
    _verify_twice(a, 2, racks(3), racks(3), ALL3, plain, 0)
    _verify_twice(a, 3, racks(2), racks(3), ALL3, plain, 5)
    owned = ["t1-0 t1-1 t1-2 t1-3 t1-4", "t1-5 t2-0 t2-1 t2-2 t2-3", "t2-4 t2-5 t2-6 t3-0 t3-1"]
    if flavour is CooperativeStickyAssignor:
        # Misaligned owned partitions: the rack-aligned targets are withheld this round.
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ALL3, ["t1-0 t1-3", "t2-1", "t2-5 t3-1"], 0, owned=owned)
    else:
        verify_rack_assignment(a, T3, 1, racks(3), racks(3), ALL3, plain, 0, owned=owned)
    a.prefer_rack_aware_logic = True
    verify_rack_assignment(a, T3, 3, racks(3), racks(3), ALL3, plain, 0, owned=plain)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_rack_aware_sticky_with_non_equal_subscription(flavour: type[AbstractStickyAssignor]) -> None:
    a = flavour()
    subs = [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]]
    plain = ["t1-5 t2-0 t2-2 t2-4 t2-6", "t1-3 t2-1 t2-3 t2-5 t3-0", "t1-0 t1-1 t1-2 t1-4 t3-1"]
    _verify_twice(a, 3, null_racks(3), racks(3), subs, plain, -1)
    _verify_twice(a, 3, racks(3), null_racks(3), subs, plain, -1)
    a.prefer_rack_aware_logic = True
    _verify_twice(a, 3, racks(3), racks(3), subs, plain, 0)
    _verify_twice(a, 4, racks(4), racks(3), subs, plain, 0)
    a.prefer_rack_aware_logic = False
    _verify_twice(a, 3, racks(3), racks(3), subs, plain, 0)
    _verify_twice(a, 3, racks(3), ["d", "e", "f"], subs, plain, -1)
    _verify_twice(a, 3, racks(3), [None, "e", "f"], subs, plain, -1)
    rf1 = ["t1-3 t2-0 t2-2 t2-3 t2-6", "t1-4 t2-1 t2-4 t2-5 t3-0", "t1-0 t1-1 t1-2 t1-5 t3-1"]
    _verify_twice(a, 1, racks(3), racks(3), subs, rf1, 4)
    rf2 = ["t1-3 t2-0 t2-2 t2-5 t2-6", "t1-0 t2-1 t2-3 t2-4 t3-0", "t1-1 t1-2 t1-4 t1-5 t3-1"]
    _verify_twice(a, 2, racks(3), racks(3), subs, rf2, 0)
    _verify_twice(a, 3, racks(2), racks(3), subs, plain, 5)
