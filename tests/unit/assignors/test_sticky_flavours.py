"""``StickyAssignorTest`` and ``CooperativeStickyAssignorTest`` (spec assignors.md §6.7, §6.8)."""

from __future__ import annotations

import pytest
from assignor_support import sub, tps
from sticky_support import GENERATION, RACK_CONFIGS, StickyHarness, is_fully_balanced

from rebalance_lab.clients.assignors import CooperativeStickyAssignor, StickyAssignor, TopicPartition
from rebalance_lab.protocol.consumer_protocol import (
    StickyMemberData,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)


def L(text: str) -> list[TopicPartition]:
    return list(tps(text))


# ------------------------------------------------------------------ both flavours: double claims


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
@pytest.mark.parametrize(
    ("partitions", "first_round", "converged"),
    [
        (3, {"consumer1": "topic-1", "consumer2": "topic-2"}, {"consumer3": "topic-0"}),
        (4, {"consumer1": "topic-1 topic-3", "consumer2": "topic-2"}, {"consumer3": "topic-0"}),
    ],
    ids=["equal-partitions-per-consumer", "unequal-partitions-per-consumer"],
)
@pytest.mark.parametrize("flavour", [StickyAssignor, CooperativeStickyAssignor])
def test_all_claimants_lose_a_partition_claimed_twice_in_one_generation(
    flavour: type[StickyAssignor] | type[CooperativeStickyAssignor],
    rack_config: str,
    partitions: int,
    first_round: dict[str, str],
    converged: dict[str, str],
) -> None:
    h = StickyHarness(flavour, rack_config)
    view = h.cluster({"topic": partitions})
    h.subscriptions.update(
        consumer1=h.v2("topic", "topic-0 topic-1", GENERATION, 0),
        consumer2=h.v2("topic", "topic-0 topic-2", GENERATION, 1),
        consumer3=h.v2("topic", "", GENERATION, 2),
    )
    assignment = h.assign(view)
    expected = {m: L(v) for m, v in first_round.items()}
    # Eager gives t-0 to consumer3 at once; cooperative withholds it until both claimants revoked it.
    expected["consumer3"] = [] if h.cooperative else L(converged["consumer3"])
    assert assignment == expected
    assignment = h.verify_validity_and_balance(view, assignment)
    assert assignment["consumer3"] == L(converged["consumer3"])
    assert is_fully_balanced(assignment)


# ------------------------------------------------------------------ eager StickyAssignor


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
@pytest.mark.parametrize("all_equal", [True, False])
def test_assignment_with_multiple_generations_1(rack_config: str, all_equal: bool) -> None:
    h = StickyHarness(StickyAssignor, rack_config)
    view = h.cluster({"topic": 6, "topic2": 6})
    both = "topic topic2"
    c2_topics = both if all_equal else "topic"
    h.subscriptions.update(consumer1=h.plain(both, 0), consumer2=h.plain(c2_topics, 1), consumer3=h.plain(both, 2))
    r1 = h.verify_validity_and_balance(view, h.assign(view))
    assert [len(v) for v in r1.values()] == [4, 4, 4]

    h.subscriptions.update(
        consumer1=h.v2(both, r1["consumer1"], GENERATION, 0), consumer2=h.v2(c2_topics, r1["consumer2"], GENERATION, 1)
    )
    del h.subscriptions["consumer3"]
    r2 = h.verify_validity_and_balance(view, h.assign(view))
    assert [len(v) for v in r2.values()] == [6, 6]
    if all_equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    del h.subscriptions["consumer1"]
    h.subscriptions.update(
        consumer2=h.v2(c2_topics, r2["consumer2"], 2, 1), consumer3=h.v2(both, r1["consumer3"], 1, 2)
    )
    r3 = h.verify_validity_and_balance(view, h.assign(view))
    assert [len(v) for v in r3.values()] == [6, 6]
    assert not set(r3["consumer2"]) & set(r3["consumer3"])


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
@pytest.mark.parametrize("all_equal", [True, False])
def test_assignment_with_conflicting_previous_generations(rack_config: str, all_equal: bool) -> None:
    h = StickyHarness(StickyAssignor, rack_config)
    view = h.cluster({"topic": 4, "topic2": 4, "topic3": 4})
    all3 = "topic topic2 topic3"
    c1_topics = all3 if all_equal else "topic"
    c2_topics = all3 if all_equal else "topic topic2"
    c1_owned = "topic-0 topic-1 topic-2 topic2-2 topic2-3 topic3-0" if all_equal else "topic-0 topic-1 topic-2 topic-3"
    c2_owned = "topic-0 topic-1 topic2-0 topic2-1 topic2-2 topic2-3"
    c3_owned = "topic-2 topic-3 topic3-0 topic3-1 topic3-2 topic3-3"
    h.subscriptions.update(
        consumer1=h.v2(c1_topics, c1_owned, 1, 0),
        consumer2=h.v2(c2_topics, c2_owned, 2, 1),
        consumer3=h.v2(all3, c3_owned, 2, 2),
    )
    assignment = h.verify_validity_and_balance(view, h.assign(view))
    assert [len(v) for v in assignment.values()] == [4, 4, 4]
    assert set(assignment["consumer2"]) <= set(L(c2_owned))
    assert set(assignment["consumer3"]) <= set(L(c3_owned))


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_schema_backward_compatibility_with_v0_user_data(rack_config: str) -> None:
    h = StickyHarness(StickyAssignor, rack_config)
    view = h.cluster({"topic": 3})
    v0_user_data = encode_sticky_user_data(L("topic-1"), None)  # no generation = StickyAssignor V0
    h.subscriptions.update(
        consumer1=h.v2("topic", "topic-0 topic-2", 1, 0),
        consumer2=sub("topic", user_data=v0_user_data, rack=h.rack(1)),
        consumer3=h.plain("topic", 2),
    )
    assignment = h.verify_validity_and_balance(view, h.assign(view))
    assert [len(v) for v in assignment.values()] == [1, 1, 1]
    assert set(assignment["consumer1"]) <= set(L("topic-0 topic-2"))
    assert assignment["consumer2"] == L("topic-1")


def test_eager_member_data_always_honours_the_user_data() -> None:
    a = StickyAssignor()
    a.on_assignment(L("topic-1"), GENERATION)
    subscription = sub("topic", "topic-0", user_data=a.subscription_user_data())
    assert a.member_data(subscription) == StickyMemberData(tuple(L("topic-1")), GENERATION)
    older = sub("topic", "", gen=GENERATION, user_data=encode_sticky_user_data(L("topic1-0 topic2-1"), 0))
    assert a.member_data(older) == StickyMemberData(tuple(L("topic1-0 topic2-1")), 0)


def test_eager_user_data_is_null_before_the_first_assignment() -> None:
    assert StickyAssignor().subscription_user_data() is None


def test_eager_assignor_with_old_version_subscriptions() -> None:
    h = StickyHarness(StickyAssignor)
    view = h.cluster({"topic1": 3})
    h.subscriptions.update(
        consumer1=sub("topic1", user_data=encode_sticky_user_data(L("topic1-0"), GENERATION)),  # v0
        consumer2=sub("topic1", "topic1-1", user_data=encode_sticky_user_data(L("topic1-1"), GENERATION)),  # v1
        consumer3=h.v2("topic1", "", GENERATION, 2),
    )
    assert h.assign(view) == {"consumer1": L("topic1-0"), "consumer2": L("topic1-1"), "consumer3": L("topic1-2")}


# ------------------------------------------------------------------ CooperativeStickyAssignor


def test_encode_and_decode_generation() -> None:
    a = CooperativeStickyAssignor()
    assert a.member_data(sub("topic", user_data=a.subscription_user_data())).generation == -1
    a.on_assignment(10)
    assert a.member_data(sub("topic", user_data=a.subscription_user_data())).generation == 10


def test_decode_generation_without_user_data_is_absent() -> None:
    assert CooperativeStickyAssignor().member_data(sub("topic")).generation is None


def test_cooperative_member_data_takes_owned_from_protocol_and_generation_from_user_data() -> None:
    a = CooperativeStickyAssignor()
    a.on_assignment(GENERATION)
    subscription = sub("topic", "topic-0", user_data=a.subscription_user_data())
    assert a.member_data(subscription) == StickyMemberData(tuple(L("topic-0")), GENERATION)


@pytest.mark.parametrize("user_data_generation", [GENERATION, GENERATION - 1])
def test_cooperative_protocol_fields_win_over_user_data(user_data_generation: int) -> None:
    subscription = sub(
        "topic", "", gen=GENERATION, user_data=encode_sticky_user_data(L("topic1-0 topic2-1"), user_data_generation)
    )
    assert CooperativeStickyAssignor().member_data(subscription) == StickyMemberData((), GENERATION)


def test_cooperative_assignor_with_old_version_subscriptions() -> None:
    h = StickyHarness(CooperativeStickyAssignor)
    view = h.cluster({"topic1": 3})
    v1_user_data = encode_cooperative_user_data(GENERATION)
    h.subscriptions.update(
        consumer1=sub("topic1", "topic1-0", user_data=v1_user_data),
        consumer2=sub("topic1", "topic1-1", user_data=v1_user_data),
        consumer3=h.v2("topic1", "", GENERATION, 2),
    )
    assignment = h.assign(view)
    assert assignment == {"consumer1": L("topic1-0"), "consumer2": L("topic1-1"), "consumer3": L("topic1-2")}
    assert is_fully_balanced(h.verify_validity_and_balance(view, assignment))


def test_uniform_subscription_transfer_ownership_list_is_right() -> None:
    h = StickyHarness(CooperativeStickyAssignor, "BROKER_AND_CONSUMER_RACK")
    h.assignor.prefer_rack_aware_logic = False
    h.broker_racks = 2
    from assignor_support import rack_cluster

    view = rack_cluster({"topic1": 4}, rf=1, num_broker_racks=2, next_node_step="one")
    h.subscriptions.update(
        c0=h.v2("topic1", "topic1-0 topic1-1", GENERATION, 0), c1=h.v2("topic1", "topic1-2 topic1-3", GENERATION, 1)
    )
    h.assign(view)
    transferring = h.assignor.partitions_transferring_ownership
    assert transferring is not None and len(transferring) == 2


def test_cooperative_supports_both_rebalance_protocols() -> None:
    assert CooperativeStickyAssignor.supported_protocols == ("COOPERATIVE", "EAGER")
