"""``RoundRobinAssignorTest`` (cases 21-33) and the examples of spec assignors.md §4."""

from __future__ import annotations

import pytest
from assignor_support import counts, group, run, sub

from rebalance_lab.clients.assignors import AssignorError, GroupSubscription, RoundRobinAssignor


def rr(view_counts: dict[str, int], *members: tuple[str, str] | tuple[str, str, str]) -> dict[str, str]:
    """Members as (id, topics) or (id, topics, instance id), in JoinGroup order."""
    grp = group(*[(m[0], sub(m[1], instance=m[2] if len(m) > 2 else None)) for m in members])
    return run(RoundRobinAssignor(), counts(**view_counts), grp)


@pytest.mark.parametrize(
    ("view", "members", "expected"),
    [
        ({}, [("consumer", "")], {"consumer": ""}),
        ({}, [("consumer", "topic")], {"consumer": ""}),
        ({"topic": 3}, [("consumer", "topic")], {"consumer": "topic-0 topic-1 topic-2"}),
        ({"topic": 3, "other": 3}, [("consumer", "topic")], {"consumer": "topic-0 topic-1 topic-2"}),
        ({"topic1": 1, "topic2": 2}, [("consumer", "topic1 topic2")], {"consumer": "topic1-0 topic2-0 topic2-1"}),
        ({"topic": 1}, [("consumer1", "topic"), ("consumer2", "topic")], {"consumer1": "topic-0", "consumer2": ""}),
        (
            {"topic": 2},
            [("consumer1", "topic"), ("consumer2", "topic")],
            {"consumer1": "topic-0", "consumer2": "topic-1"},
        ),
        (
            {"topic1": 3, "topic2": 2},
            [("consumer1", "topic1"), ("consumer2", "topic1 topic2"), ("consumer3", "topic1")],
            {"consumer1": "topic1-0", "consumer2": "topic1-1 topic2-0 topic2-1", "consumer3": "topic1-2"},
        ),
        (
            {"topic1": 3, "topic2": 3},
            [("consumer1", "topic1 topic2"), ("consumer2", "topic1 topic2")],
            {"consumer1": "topic1-0 topic1-2 topic2-1", "consumer2": "topic1-1 topic2-0 topic2-2"},
        ),
    ],
    ids=[
        "one-consumer-no-topic",
        "one-consumer-nonexistent-topic",
        "one-consumer-one-topic",
        "only-subscribed-topics",
        "one-consumer-multiple-topics",
        "two-consumers-one-partition",
        "two-consumers-two-partitions",
        "mixed-topics",
        "two-dynamic-consumers-six-partitions",
    ],
)
def test_round_robin_catalogue(view: dict[str, int], members: list[tuple[str, str]], expected: dict[str, str]) -> None:
    assert rr(view, *members) == expected


@pytest.mark.parametrize("instance_a", ["instance2", None], ids=["two-static", "static-and-dynamic"])
def test_static_consumer_b_sorts_first(instance_a: str | None) -> None:
    grp = group(("consumer-b", sub("t1 t2", instance="instance1")), ("consumer-a", sub("t1 t2", instance=instance_a)))
    assert run(RoundRobinAssignor(), counts(t1=3, t2=3), grp) == {
        "consumer-b": "t1-0 t1-2 t2-1",
        "consumer-a": "t1-1 t2-0 t2-2",
    }


def test_static_member_round_robin_assignment_persistent() -> None:
    statics = [
        ("consumer1", "t1 t2", "instance1"),
        ("consumer2", "t1 t2", "instance2"),
        ("consumer3", "t1 t2", "instance3"),
    ]
    expected = {"consumer1": "t1-0 t2-1", "consumer2": "t1-1 t2-2", "consumer3": "t1-2"}
    assert rr({"t1": 3, "t2": 3}, *statics, ("consumer4", "t1 t2")) == {**expected, "consumer4": "t2-0"}
    assert rr({"t1": 3, "t2": 3}, *statics, ("consumer5", "t1 t2")) == {**expected, "consumer5": "t2-0"}


def test_static_member_round_robin_assignment_persistent_after_member_ids_change() -> None:
    def by_instance(ids: list[str]) -> dict[str, str]:
        result = rr({"t1": 5, "t2": 5}, *[(m, "t1 t2", f"i{n + 1}") for n, m in enumerate(ids)])
        return {f"i{n + 1}": result[m] for n, m in enumerate(ids)}

    first = by_instance(["consumer1", "consumer2", "consumer3"])
    assert first == {"i1": "t1-0 t1-3 t2-1 t2-4", "i2": "t1-1 t1-4 t2-2", "i3": "t1-2 t2-0 t2-3"}
    assert by_instance(["consumer5", "consumer4", "consumer6"]) == first


def test_round_robin_skips_unsubscribed_members_and_carries_the_cursor_across_topics() -> None:
    members = [("C0", "t0"), ("C1", "t0 t1"), ("C2", "t0 t1 t2")]
    assert rr({"t0": 1, "t1": 2, "t2": 3}, *members) == {"C0": "t0-0", "C1": "t1-0", "C2": "t1-1 t2-0 t2-1 t2-2"}
    assert rr({"t0": 1, "t1": 2, "t2": 3}, *members[1:]) == {"C1": "t0-0 t1-1", "C2": "t1-0 t2-0 t2-1 t2-2"}


def test_round_robin_worked_examples() -> None:
    assert rr({"t0": 3, "t1": 3}, ("C0", "t0 t1"), ("C1", "t0 t1")) == {
        "C0": "t0-0 t0-2 t1-1",
        "C1": "t0-1 t1-0 t1-2",
    }
    all4 = "t0 t1 t2 t3"
    assert rr({"t0": 2, "t1": 2, "t2": 2, "t3": 2}, ("C0", all4), ("C1", all4), ("C2", all4)) == {
        "C0": "t0-0 t1-1 t3-0",
        "C1": "t0-1 t2-0 t3-1",
        "C2": "t1-0 t2-1",
    }
    assert rr({"t0": 5, "t1": 4}, ("m-b", "t0 t1", "i1"), ("m-a", "t0 t1", "i2"), ("m-0", "t0 t1")) == {
        "m-b": "t0-0 t0-3 t1-1",
        "m-a": "t0-1 t0-4 t1-2",
        "m-0": "t0-2 t1-0 t1-3",
    }


def test_round_robin_keeps_a_static_member_between_dynamic_ones() -> None:
    # kafka-python's groupby bug drops m1 here (spec §7.1); Java keeps static members first.
    result = rr({"t": 6}, ("m1", "t", "i1"), ("m2", "t"), ("m3", "t", "i3"))
    assert result == {"m1": "t-0 t-3", "m2": "t-2 t-5", "m3": "t-1 t-4"}


def test_round_robin_with_no_members_raises_like_java() -> None:
    with pytest.raises(AssignorError) as err:
        RoundRobinAssignor().assign(counts(t=1), GroupSubscription({}))
    assert err.value.java_exception == "IllegalArgumentException"
