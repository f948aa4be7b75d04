"""``RangeAssignorTest`` (cases 1-20) and the range examples of spec assignors.md §3."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from assignor_support import (
    ALL_RACKS,
    counts,
    group,
    null_racks,
    rack_cluster,
    racks,
    run,
    sub,
    verify_rack_assignment,
)

from rebalance_lab.clients.assignors import (
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    RangeAssignor,
    Subscription,
)


@dataclass(frozen=True)
class RackConfig:
    """``RangeAssignorTest.initializeRacks``: rf 3, 3 broker racks unless NO_BROKER_RACK,
    consumer i on ALL_RACKS[i % racks] unless NO_CONSUMER_RACK, preferRackAwareLogic on."""

    name: str
    broker_racks: int
    consumer_racks: bool

    def cluster(self, **topic_counts: int) -> ClusterView:
        return rack_cluster(topic_counts, rf=3, num_broker_racks=self.broker_racks, next_node_step="zero")

    def sub(self, topics: str, index: int, instance: str | None = None) -> Subscription:
        n = self.broker_racks or len(ALL_RACKS)
        return sub(topics, rack=ALL_RACKS[index % n] if self.consumer_racks else None, instance=instance)


RACK_CONFIGS = [
    RackConfig("NO_BROKER_RACK", 0, True),
    RackConfig("NO_CONSUMER_RACK", 3, False),
    RackConfig("BROKER_AND_CONSUMER_RACK", 3, True),
]


@pytest.fixture(params=RACK_CONFIGS, ids=lambda c: c.name)
def rc(request: pytest.FixtureRequest) -> RackConfig:
    config: RackConfig = request.param
    return config


def assign(rc: RackConfig, view: ClusterView, grp: GroupSubscription) -> dict[str, set[str]]:
    result = run(RangeAssignor(prefer_rack_aware_logic=True), view, grp)
    return {m: set(v.split()) for m, v in result.items()}


def S(text: str) -> set[str]:
    return set(text.replace(",", " ").split())


def test_one_consumer_no_topic(rc: RackConfig) -> None:
    assert assign(rc, rc.cluster(), group(("consumer1", rc.sub("", 0)))) == {"consumer1": set()}


def test_one_consumer_nonexistent_topic(rc: RackConfig) -> None:
    assert assign(rc, rc.cluster(), group(("consumer1", rc.sub("topic1", 0)))) == {"consumer1": set()}


def test_one_consumer_one_topic(rc: RackConfig) -> None:
    got = assign(rc, rc.cluster(topic1=3), group(("consumer1", rc.sub("topic1", 0))))
    assert got == {"consumer1": S("topic1-0 topic1-1 topic1-2")}


def test_only_assigns_partitions_from_subscribed_topics(rc: RackConfig) -> None:
    got = assign(rc, rc.cluster(topic1=3, other=3), group(("consumer1", rc.sub("topic1", 0))))
    assert got == {"consumer1": S("topic1-0 topic1-1 topic1-2")}


def test_one_consumer_multiple_topics(rc: RackConfig) -> None:
    got = assign(rc, rc.cluster(topic1=1, topic2=2), group(("consumer1", rc.sub("topic1 topic2", 0))))
    assert got == {"consumer1": S("topic1-0 topic2-0 topic2-1")}


@pytest.mark.parametrize(("partitions", "c1", "c2"), [(1, "topic1-0", ""), (2, "topic1-0", "topic1-1")])
def test_two_consumers_one_topic(rc: RackConfig, partitions: int, c1: str, c2: str) -> None:
    grp = group(("consumer1", rc.sub("topic1", 0)), ("consumer2", rc.sub("topic1", 1)))
    assert assign(rc, rc.cluster(topic1=partitions), grp) == {"consumer1": S(c1), "consumer2": S(c2)}


def test_multiple_consumers_mixed_topics(rc: RackConfig) -> None:
    grp = group(
        ("consumer1", rc.sub("topic1", 0)),
        ("consumer2", rc.sub("topic1 topic2", 1)),
        ("consumer3", rc.sub("topic1", 2)),
    )
    assert assign(rc, rc.cluster(topic1=3, topic2=2), grp) == {
        "consumer1": S("topic1-0"),
        "consumer2": S("topic1-1 topic2-0 topic2-1"),
        "consumer3": S("topic1-2"),
    }


def test_two_consumers_two_topics_six_partitions(rc: RackConfig) -> None:
    grp = group(("consumer1", rc.sub("topic1 topic2", 0)), ("consumer2", rc.sub("topic1 topic2", 1)))
    assert assign(rc, rc.cluster(topic1=3, topic2=3), grp) == {
        "consumer1": S("topic1-0 topic1-1 topic2-0 topic2-1"),
        "consumer2": S("topic1-2 topic2-2"),
    }


@pytest.mark.parametrize(
    ("instance_b", "instance_a"),
    [("instance1", "instance2"), ("instance1", None)],
    ids=["two-static", "static-dynamic"],
)
def test_static_consumer_b_sorts_before_consumer_a(rc: RackConfig, instance_b: str, instance_a: str | None) -> None:
    grp = group(
        ("consumer-b", rc.sub("topic1 topic2", 0, instance=instance_b)),
        ("consumer-a", rc.sub("topic1 topic2", 1, instance=instance_a)),
    )
    assert assign(rc, rc.cluster(topic1=3, topic2=3), grp) == {
        "consumer-b": S("topic1-0 topic1-1 topic2-0 topic2-1"),
        "consumer-a": S("topic1-2 topic2-2"),
    }


def test_static_member_range_assignment_persistent() -> None:
    view = rack_cluster({"topic1": 5, "topic2": 4}, rf=5, num_broker_racks=5, next_node_step="zero")
    members = [("consumer1", "instance1"), ("consumer2", "instance2"), ("consumer3", "instance3")]

    def subs(dynamic: str) -> GroupSubscription:
        pairs = [(m, sub("topic1 topic2", instance=i, rack=ALL_RACKS[n])) for n, (m, i) in enumerate(members)]
        return group(*pairs, (dynamic, sub("topic1 topic2", rack=ALL_RACKS[3])))

    expected = {
        "consumer1": "topic1-0 topic1-1 topic2-0",
        "consumer2": "topic1-2 topic2-1",
        "consumer3": "topic1-3 topic2-2",
    }
    first = run(RangeAssignor(), view, subs("consumer4"))
    assert first == {**expected, "consumer4": "topic1-4 topic2-3"}
    assert run(RangeAssignor(), view, subs("consumer5")) == {**expected, "consumer5": "topic1-4 topic2-3"}


@pytest.mark.parametrize(
    ("rf", "broker_racks", "expected"),
    [
        (3, 0, ["t1-0 t1-1 t2-0 t2-1", "t1-2 t1-3 t2-2 t2-3", "t1-4 t2-4"]),
        (2, 3, ["t1-0 t1-2 t2-0 t2-2", "t1-1 t1-3 t2-1 t2-3", "t1-4 t2-4"]),
    ],
    ids=["plain", "rack-aware-rf2"],
)
def test_static_member_assignment_persists_after_member_ids_change(
    rf: int, broker_racks: int, expected: list[str]
) -> None:
    view = rack_cluster({"t1": 5, "t2": 5}, rf=rf, num_broker_racks=broker_racks, next_node_step="zero")
    rack = (lambda i: ALL_RACKS[i]) if broker_racks else (lambda i: None)

    def by_instance(ids: Sequence[str]) -> dict[str, str]:
        grp = group(*[(m, sub("t1 t2", instance=f"i{n + 1}", rack=rack(n))) for n, m in enumerate(ids)])
        result = run(RangeAssignor(), view, grp)
        return {f"i{n + 1}": " ".join(sorted(result[m].split())) for n, m in enumerate(ids)}

    first = by_instance(["consumer1", "consumer2", "consumer3"])
    assert first == {f"i{n + 1}": " ".join(sorted(e.split())) for n, e in enumerate(expected)}
    assert by_instance(["consumer5", "consumer4", "consumer6"]) == first


# ------------------------------------------------------------------ rack-aware (cases 15-20)


def verify_non_rack_aware(topics: dict[str, int], consumer_topics: list[list[str]], expected: list[str]) -> None:
    """``RangeAssignorTest.verifyNonRackAwareAssignment``: every combination where rack logic
    stays off (or cannot change anything) gives the classic result."""
    for rf, brokers, consumers, mismatches in [
        (3, null_racks(3), racks(3), -1),
        (3, racks(3), null_racks(3), -1),
        (3, racks(3), racks(3), 0),
        (4, racks(4), racks(3), 0),
        (3, racks(3), ["d", "e", "f"], -1),
        (3, racks(3), [None, "e", "f"], -1),
    ]:
        verify_rack_assignment(RangeAssignor(), topics, rf, brokers, consumers, consumer_topics, expected, mismatches)
    verify_rack_assignment(
        RangeAssignor(prefer_rack_aware_logic=True), topics, 3, racks(3), racks(3), consumer_topics, expected, 0
    )


ALL3 = ["t1", "t2", "t3"]


def test_rack_aware_assignment_with_uniform_subscription() -> None:
    topics = {"t1": 6, "t2": 7, "t3": 2}
    subs = [ALL3, ALL3, ALL3]
    verify_non_rack_aware(
        topics, subs, ["t1-0 t1-1 t2-0 t2-1 t2-2 t3-0", "t1-2 t1-3 t2-3 t2-4 t3-1", "t1-4 t1-5 t2-5 t2-6"]
    )
    a = RangeAssignor()
    verify_rack_assignment(
        a, topics, 1, racks(3), racks(3), subs,
        ["t1-0 t1-3 t2-0 t2-3 t2-6", "t1-1 t1-4 t2-1 t2-4 t3-0", "t1-2 t1-5 t2-2 t2-5 t3-1"], 0,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 2, racks(3), racks(3), subs,
        ["t1-0 t1-2 t2-0 t2-2 t2-3 t3-1", "t1-1 t1-3 t2-1 t2-4 t3-0", "t1-4 t1-5 t2-5 t2-6"], 1,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 3, racks(2), racks(3), subs,
        ["t1-0 t1-1 t2-0 t2-1 t2-2 t3-0", "t1-2 t1-3 t2-3 t2-4 t3-1", "t1-4 t1-5 t2-5 t2-6"], 4,
    )  # fmt: skip


def test_rack_aware_assignment_with_non_equal_subscription() -> None:
    topics = {"t1": 6, "t2": 7, "t3": 2}
    subs = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(
        topics, subs, ["t1-0 t1-1 t2-0 t2-1 t2-2 t2-3 t3-0", "t1-2 t1-3 t2-4 t2-5 t2-6 t3-1", "t1-4 t1-5"]
    )
    a = RangeAssignor()
    verify_rack_assignment(
        a, topics, 1, racks(3), racks(3), subs,
        ["t1-0 t1-3 t2-0 t2-2 t2-3 t2-6", "t1-1 t1-4 t2-1 t2-4 t2-5 t3-0", "t1-2 t1-5 t3-1"], 2,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 2, racks(3), racks(3), subs,
        ["t1-0 t1-2 t2-0 t2-2 t2-3 t2-5 t3-1", "t1-1 t1-3 t2-1 t2-4 t2-6 t3-0", "t1-4 t1-5"], 0,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 3, racks(2), racks(3), subs,
        ["t1-0 t1-1 t2-0 t2-1 t2-2 t2-3 t3-0", "t1-2 t1-3 t2-4 t2-5 t2-6 t3-1", "t1-4 t1-5"], 2,
    )  # fmt: skip


def test_rack_aware_assignment_with_uniform_partitions_prefers_co_partitioning() -> None:
    topics = {"t1": 5, "t2": 5, "t3": 5}
    subs = [ALL3, ALL3, ALL3]
    expected = ["t1-0 t1-1 t2-0 t2-1 t3-0 t3-1", "t1-2 t1-3 t2-2 t2-3 t3-2 t3-3", "t1-4 t2-4 t3-4"]
    verify_non_rack_aware(topics, subs, expected)
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 1, racks(3), racks(3), subs, expected, 10)
    verify_rack_assignment(a, topics, 2, racks(3), racks(3), subs, expected, 5)
    verify_rack_assignment(a, topics, 3, racks(2), racks(3), subs, expected, 3)


def test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription() -> None:
    topics = {"t1": 5, "t2": 5, "t3": 5}
    subs = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(
        topics, subs, ["t1-0 t1-1 t2-0 t2-1 t2-2 t3-0 t3-1", "t1-2 t1-3 t2-3 t2-4 t3-2 t3-3", "t1-4 t3-4"]
    )
    a = RangeAssignor()
    verify_rack_assignment(
        a, topics, 1, racks(3), racks(3), subs,
        ["t1-0 t1-1 t2-0 t2-1 t2-4 t3-0 t3-1", "t1-2 t1-3 t2-2 t2-3 t3-2 t3-3", "t1-4 t3-4"], 9,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 2, racks(3), racks(3), subs,
        ["t1-2 t2-0 t2-1 t2-3 t3-2", "t1-0 t1-3 t2-2 t2-4 t3-0 t3-3", "t1-1 t1-4 t3-1 t3-4"], 0,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 3, racks(2), racks(3), subs,
        ["t1-0 t1-1 t2-0 t2-1 t2-2 t3-0 t3-1", "t1-2 t1-3 t2-3 t2-4 t3-2 t3-3", "t1-4 t3-4"], 2,
    )  # fmt: skip


def test_rack_aware_assignment_with_co_partitioning() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks: list[str | None] = ["a", "b", "b", "a"]
    subs = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    plain = ["t1-0 t1-1 t1-2 t2-0 t2-1 t2-2", "t1-3 t1-4 t1-5 t2-3 t2-4 t2-5", "t3-0 t4-0", "t3-1 t4-1"]
    a = RangeAssignor()
    verify_rack_assignment(a, topics, 3, racks(2), consumer_racks, subs, plain, -1)
    verify_rack_assignment(a, topics, 2, racks(2), consumer_racks, subs, plain, 0)
    verify_rack_assignment(
        a, topics, 1, racks(2), consumer_racks, subs,
        ["t1-0 t1-2 t1-4 t2-0 t2-2 t2-4", "t1-1 t1-3 t1-5 t2-1 t2-3 t2-5", "t3-1 t4-1", "t3-0 t4-0"], 0,
    )  # fmt: skip
    all4 = [["t1", "t2", "t3", "t4"]] * 4
    plain = ["t1-0 t1-1 t2-0 t2-1 t3-0 t4-0", "t1-2 t1-3 t2-2 t2-3 t3-1 t4-1", "t1-4 t2-4", "t1-5 t2-5"]
    verify_rack_assignment(a, topics, 3, racks(2), consumer_racks, all4, plain, -1)
    verify_rack_assignment(a, topics, 2, racks(2), consumer_racks, all4, plain, 0)
    verify_rack_assignment(
        a, topics, 1, racks(2), consumer_racks, all4,
        ["t1-0 t1-2 t2-0 t2-2 t3-0 t4-0", "t1-1 t1-3 t2-1 t2-3 t3-1 t4-1", "t1-5 t2-5", "t1-4 t2-4"], 0,
    )  # fmt: skip
    verify_rack_assignment(
        a, topics, 1, racks(3), consumer_racks, all4,
        ["t1-0 t1-3 t2-0 t2-3 t3-0 t4-0", "t1-1 t1-4 t2-1 t2-4 t3-1 t4-1", "t1-2 t2-2", "t1-5 t2-5"], 6,
    )  # fmt: skip


def test_co_partitioned_assignment_with_same_subscription() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    subs = [["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]] * 3
    consumer_racks: list[str | None] = ["a", "b", "c"]
    plain = [
        "t1-0 t1-1 t2-0 t2-1 t3-0 t4-0 t5-0 t5-1 t6-0 t6-1",
        "t1-2 t1-3 t2-2 t2-3 t3-1 t4-1 t5-2 t6-2",
        "t1-4 t1-5 t2-4 t2-5 t5-3 t6-3",
    ]
    verify_rack_assignment(RangeAssignor(), topics, 3, null_racks(3), consumer_racks, subs, plain, -1)
    prefer = RangeAssignor(prefer_rack_aware_logic=True)
    verify_rack_assignment(prefer, topics, 3, racks(3), consumer_racks, subs, plain, 0)
    verify_rack_assignment(
        prefer, topics, 2, racks(3), consumer_racks, subs,
        [
            "t1-0 t1-2 t2-0 t2-2 t3-0 t4-0 t5-1 t6-1",
            "t1-1 t1-3 t2-1 t2-3 t3-1 t4-1 t5-2 t6-2",
            "t1-4 t1-5 t2-4 t2-5 t5-0 t5-3 t6-0 t6-3",
        ],
        0,
    )  # fmt: skip


# ------------------------------------------------------------------ spec §3.5 / §3.4 / §3.6 examples


def test_range_gives_the_first_consumers_the_extra_partition_of_every_topic() -> None:
    grp = group(("C0", sub("t0 t1")), ("C1", sub("t0 t1")))
    assert run(RangeAssignor(), counts(t0=3, t1=3), grp) == {"C0": "t0-0 t0-1 t1-0 t1-1", "C1": "t0-2 t1-2"}


def test_range_with_unequal_subscriptions() -> None:
    grp = group(("C0", sub("t0")), ("C1", sub("t0 t1")), ("C2", sub("t0 t1 t2")))
    assert run(RangeAssignor(), counts(t0=1, t1=2, t2=3), grp) == {
        "C0": "t0-0",
        "C1": "t1-0",
        "C2": "t1-1 t2-0 t2-1 t2-2",
    }


def test_range_orders_static_members_by_instance_id_before_dynamic_ones() -> None:
    grp = group(("m-b", sub("t0 t1", instance="i1")), ("m-a", sub("t0 t1", instance="i2")), ("m-0", sub("t0 t1")))
    assert run(RangeAssignor(), counts(t0=5, t1=4), grp) == {
        "m-b": "t0-0 t0-1 t1-0 t1-1",
        "m-a": "t0-2 t0-3 t1-2",
        "m-0": "t0-4 t1-3",
    }


def test_range_lists_follow_java_hashmap_topic_order_without_racks() -> None:
    grp = group(("c", sub("zeta alpha mid")))
    assert run(RangeAssignor(), counts(zeta=2, alpha=2, mid=2), grp) == {
        "c": "zeta-0 zeta-1 alpha-0 alpha-1 mid-0 mid-1"
    }


@pytest.mark.parametrize("c2_rack", ["c", "z"])
def test_range_rack_aware_per_topic_aligns_partitions_with_consumer_racks(c2_rack: str) -> None:
    view = ClusterView({"t1": tuple(PartitionMeta(i, ("abc"[i % 3],)) for i in range(6))})
    grp = group(("c0", sub("t1", rack="a")), ("c1", sub("t1", rack="b")), ("c2", sub("t1", rack=c2_rack)))
    assert run(RangeAssignor(), view, grp) == {"c0": "t1-0 t1-3", "c1": "t1-1 t1-4", "c2": "t1-2 t1-5"}


def test_range_with_no_members_is_empty() -> None:
    assert RangeAssignor().assign(counts(t=3), GroupSubscription({})) == {}


def test_range_counts_a_topic_listed_twice_once() -> None:
    grp = group(("a", sub(["t", "t"])), ("b", sub("t")))
    assert run(RangeAssignor(), counts(t=4), grp) == {"a": "t-0 t-1", "b": "t-2 t-3"}


def test_range_sorts_lists_when_rack_aware() -> None:
    view = rack_cluster({"zeta": 2, "alpha": 2}, rf=1, num_broker_racks=2, next_node_step="count")
    grp = group(("c", sub("zeta alpha", rack="a")))
    assert run(RangeAssignor(prefer_rack_aware_logic=True), view, grp) == {"c": "alpha-0 alpha-1 zeta-0 zeta-1"}
