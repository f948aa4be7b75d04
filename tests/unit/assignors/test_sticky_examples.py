"""Sticky and cooperative-sticky: the worked examples and quirks of spec assignors.md §5.7, §5.9."""

from __future__ import annotations

import pytest
from assignor_support import counts, eager_sub, group, run, sub, tps

from rebalance_lab.clients.assignors import (
    AbstractStickyAssignor,
    AssignorError,
    CooperativeStickyAssignor,
    GroupSubscription,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from rebalance_lab.clients.assignors.common import member_hash_order
from rebalance_lab.clients.assignors.types import PartitionMeta

FLAVOURS = [StickyAssignor, CooperativeStickyAssignor]


def owning(flavour: type[AbstractStickyAssignor], topics: str, owned: str, gen: int) -> Subscription:
    """A member that owned ``owned`` in generation ``gen``, as each flavour transports it."""
    if flavour is StickyAssignor:
        return eager_sub(topics, owned, gen=gen)
    return sub(topics, owned, gen=gen)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_unequal_subscriptions_use_the_general_path(flavour: type[AbstractStickyAssignor]) -> None:
    grp = group(("C0", sub("t0")), ("C1", sub("t0 t1")), ("C2", sub("t0 t1 t2")))
    result = run(flavour(), counts(t0=1, t1=2, t2=3), grp)
    assert result == {"C0": "t0-0", "C1": "t1-0 t1-1", "C2": "t2-0 t2-1 t2-2"}


def test_eager_sticky_after_c0_leaves_the_unequal_group() -> None:
    grp = group(("C1", eager_sub("t0 t1", "t1-0 t1-1", gen=1)), ("C2", eager_sub("t0 t1 t2", "t2-0 t2-1 t2-2", gen=1)))
    assert run(StickyAssignor(), counts(t0=1, t1=2, t2=3), grp) == {"C1": "t1-0 t1-1 t0-0", "C2": "t2-0 t2-1 t2-2"}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_equal_subscriptions_then_c2_leaves(flavour: type[AbstractStickyAssignor]) -> None:
    view = counts(t0=3, t1=3)
    first = run(flavour(), view, group(*[(c, sub("t0 t1")) for c in ["C0", "C1", "C2"]]))
    assert first == {"C0": "t0-0 t1-0", "C1": "t0-1 t1-1", "C2": "t0-2 t1-2"}
    grp = group(("C0", owning(flavour, "t0 t1", first["C0"], 1)), ("C1", owning(flavour, "t0 t1", first["C1"], 1)))
    assert run(flavour(), view, grp) == {"C0": "t0-0 t1-0 t0-2", "C1": "t0-1 t1-1 t1-2"}


def test_javadoc_example_one_and_c1_removed() -> None:
    view = counts(t0=2, t1=2, t2=2, t3=2)
    first = run(StickyAssignor(), view, group(*[(c, sub("t0 t1 t2 t3")) for c in ["C0", "C1", "C2"]]))
    assert first == {"C0": "t0-0 t1-1 t3-0", "C1": "t0-1 t2-0 t3-1", "C2": "t1-0 t2-1"}
    grp = group(
        ("C0", eager_sub("t0 t1 t2 t3", first["C0"], gen=1)), ("C2", eager_sub("t0 t1 t2 t3", first["C2"], gen=1))
    )
    # Not the StickyAssignor javadoc's result (quirk Q8): current code sorts kept partitions by (partition, topic).
    assert run(StickyAssignor(), view, grp) == {"C0": "t0-0 t3-0 t1-1 t0-1", "C2": "t1-0 t2-1 t2-0 t3-1"}


def test_cooperative_new_member_gets_nothing_until_c0_revokes() -> None:
    view = counts(t0=3, t1=3)
    everything = "t0-0 t0-1 t0-2 t1-0 t1-1 t1-2"
    eager = run(StickyAssignor(), view, group(("C0", eager_sub("t0 t1", everything, gen=3)), ("C1", sub("t0 t1"))))
    assert eager == {"C0": "t0-0 t1-0 t0-1", "C1": "t0-2 t1-1 t1-2"}
    phase1 = run(
        CooperativeStickyAssignor(), view, group(("C0", sub("t0 t1", everything, gen=3)), ("C1", sub("t0 t1")))
    )
    assert phase1 == {"C0": "t0-0 t1-0 t0-1", "C1": ""}
    phase2 = run(
        CooperativeStickyAssignor(),
        view,
        group(("C0", sub("t0 t1", phase1["C0"], gen=4)), ("C1", sub("t0 t1", "", gen=4))),
    )
    assert phase2 == {"C0": "t0-0 t1-0 t0-1", "C1": "t0-2 t1-1 t1-2"}


@pytest.mark.parametrize(
    ("ids", "expected_eager", "expected_coop"),
    [
        (
            ["A", "B", "C", "D"],
            {"A": "t-0 t-1", "B": "t-2", "C": "t-4", "D": "t-3"},
            {"A": "t-0 t-1", "B": "t-2", "C": "t-4", "D": ""},
        ),
        (
            ["member-10", "member-9", "member-8", "member-7"],
            {"member-10": "t-0", "member-9": "t-2 t-3", "member-8": "t-4", "member-7": "t-1"},
            {"member-10": "t-0", "member-9": "t-2 t-3", "member-8": "t-4", "member-7": ""},
        ),
    ],
)
def test_java_hashmap_order_decides_who_keeps_max_quota(
    ids: list[str], expected_eager: dict[str, str], expected_coop: dict[str, str]
) -> None:
    owned = ["t-0 t-1", "t-2 t-3", "t-4", ""]
    coop = group(*[(m, sub("t", o, gen=1)) for m, o in zip(ids, owned, strict=True)])
    assert run(CooperativeStickyAssignor(), counts(t=5), coop) == expected_coop
    eager = group(*[(m, eager_sub("t", o, gen=1) if o else sub("t")) for m, o in zip(ids, owned, strict=True)])
    assert run(StickyAssignor(), counts(t=5), eager) == expected_eager


def test_double_claims_in_one_generation_disqualify_every_claimant() -> None:
    view = counts(t=3)
    a = CooperativeStickyAssignor()
    grp = group(("c1", sub("t", "t-0 t-1", gen=5)), ("c2", sub("t", "t-0 t-2", gen=5)), ("c3", sub("t")))
    assert run(a, view, grp) == {"c1": "t-1", "c2": "t-2", "c3": ""}
    assert a.partitions_transferring_ownership == {TopicPartition("t", 0): "c3"}
    eager = group(
        ("c1", _eager_with_protocol_gen("t-0 t-1", 5)),
        ("c2", _eager_with_protocol_gen("t-0 t-2", 5)),
        ("c3", sub("t")),
    )
    assert run(StickyAssignor(), view, eager) == {"c1": "t-1", "c2": "t-2", "c3": "t-0"}


def test_higher_generation_wins_a_double_claim() -> None:
    a = CooperativeStickyAssignor()
    grp = group(("c1", sub("t", "t-0 t-1", gen=4)), ("c2", sub("t", "t-0 t-2", gen=5)), ("c3", sub("t")))
    assert run(a, counts(t=3), grp) == {"c1": "t-1", "c2": "t-0", "c3": ""}
    assert a.partitions_transferring_ownership == {TopicPartition("t", 2): "c3"}


def test_double_claim_is_withheld_even_when_handed_back_to_a_claimant_on_the_constrained_path() -> None:
    grp = group(("c1", sub("t", "t-0 t-1", gen=5)), ("c2", sub("t", "t-0 t-2", gen=5)))
    assert run(CooperativeStickyAssignor(), counts(t=4), grp) == {"c1": "t-1", "c2": "t-2 t-3"}


def test_double_claim_goes_straight_to_a_claimant_on_the_general_path() -> None:
    grp = group(("c1", sub("t u", "t-0 t-1", gen=5)), ("c2", sub("t", "t-0 t-2", gen=5)))
    assert run(CooperativeStickyAssignor(), counts(t=4, u=1), grp) == {"c1": "t-1 u-0 t-3", "c2": "t-2 t-0"}


def test_general_path_with_history() -> None:
    view = counts(t1=3, t2=3)
    eager = group(
        ("c1", eager_sub("t1 t2", "t1-0 t1-1 t1-2 t2-0", gen=2)),
        ("c2", eager_sub("t1", "", gen=2)),
        ("c3", eager_sub("t2", "t2-1", gen=2)),
    )
    assert run(StickyAssignor(), view, eager) == {"c1": "t1-2 t2-0", "c2": "t1-0 t1-1", "c3": "t2-1 t2-2"}
    coop = group(
        ("c1", sub("t1 t2", "t1-0 t1-1 t1-2 t2-0", gen=2)),
        ("c2", sub("t1", "", gen=2)),
        ("c3", sub("t2", "t2-1", gen=2)),
    )
    assert run(CooperativeStickyAssignor(), view, coop) == {"c1": "t1-2 t2-0", "c2": "", "c3": "t2-1 t2-2"}


# ------------------------------------------------------------------ quirks Q1-Q7


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["A", "B", "C"], {"A": "t-0", "B": "t-1", "C": "t-2"}),
        (["Z", "B", "C"], {"Z": "", "B": "t-0 t-2", "C": "t-1"}),
    ],
)
def test_q1_an_empty_subscription_iterated_first_does_not_fix_the_topic_set(
    ids: list[str], expected: dict[str, str]
) -> None:
    grp = group((ids[0], sub("")), (ids[1], sub("t")), (ids[2], sub("t")))
    assert member_hash_order(grp)[0] == ("A" if ids[0] == "A" else "B")
    assert run(StickyAssignor(), counts(t=3), grp) == expected


def test_q2_eager_claims_compare_user_data_generation_with_the_protocol_generation() -> None:
    no_protocol_gen = group(("c1", eager_sub("t", "t-0", gen=5)), ("c2", eager_sub("t", "t-0", gen=5)))
    assert run(StickyAssignor(), counts(t=2), no_protocol_gen) == {"c1": "t-1", "c2": "t-0"}
    with_protocol_gen = group(("c1", _eager_with_protocol_gen("t-0", 5)), ("c2", _eager_with_protocol_gen("t-0", 5)))
    assert run(StickyAssignor(), counts(t=2), with_protocol_gen) == {"c1": "t-0", "c2": "t-1"}


def _eager_with_protocol_gen(owned: str, gen: int) -> Subscription:
    """``buildSubscriptionV2Above`` for eager: V1 user data plus the protocol generation."""
    return sub("t", user_data=eager_sub("t", owned, gen=gen).user_data, gen=gen)


def test_q3_constrained_path_hands_out_every_topic_it_is_given() -> None:
    grp = group(("B", sub("t")), ("C", sub("t")))
    ppt = {
        "t": (PartitionMeta(0), PartitionMeta(1)),
        "other": (PartitionMeta(0), PartitionMeta(1)),
    }
    lists = StickyAssignor().assign_partitions(ppt, grp, member_hash_order(grp))
    assert lists == {"B": list(tps("other-0 t-0")), "C": list(tps("other-1 t-1"))}


def test_q4_max_generation_lives_on_the_assignor_instance() -> None:
    a = CooperativeStickyAssignor()
    run(a, counts(t=2), group(("x", sub("t", "", gen=9))))
    assert a.max_generation == 9
    run(a, counts(t=2), group(("x", sub("t", "", gen=1))))
    assert a.max_generation == 9


def test_q5_previous_owner_taken_out_as_fixed_raises_null_pointer_like_java() -> None:
    # c1 (older generation) owned t-0 and now subscribes only to "u", a topic with no partitions;
    # it ends up a fixed consumer, and moving t-0 back towards it dereferences a missing entry.
    grp = group(
        ("c1", sub("u", "t-0", gen=1)),
        ("c2", sub("t", "t-0 t-1 t-2 t-3", gen=2)),
        ("c3", sub("t")),
    )
    with pytest.raises(AssignorError) as err:
        CooperativeStickyAssignor().assign(counts(t=4, u=0), grp)
    assert err.value.java_exception == "NullPointerException"


@pytest.mark.parametrize(
    ("gens", "expected", "transferring"),
    [
        ((5, 5, 6), {"A": "", "B": "t-1", "C": "t-2"}, {TopicPartition("t", 0): "A"}),
        ((6, 5, 5), {"A": "t-0", "B": "t-1", "C": "t-2"}, {}),
    ],
)
def test_q6_mixed_generation_chains_depend_on_iteration_order(
    gens: tuple[int, int, int], expected: dict[str, str], transferring: dict[TopicPartition, str]
) -> None:
    a = CooperativeStickyAssignor()
    grp = group(*[(m, sub("t", "t-0", gen=g)) for m, g in zip("ABC", gens, strict=True)])
    assert run(a, counts(t=3), grp) == expected
    assert a.partitions_transferring_ownership == transferring


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_q7_no_members_raises_arithmetic_exception(flavour: type[AbstractStickyAssignor]) -> None:
    with pytest.raises(AssignorError) as err:
        flavour().assign(counts(t=1), GroupSubscription({}))
    assert err.value.java_exception == "ArithmeticException"


# ------------------------------------------------------------------ owned ids beyond the partition count
# (a topic deleted and re-created with fewer partitions). Expectations produced by Kafka 3.9.2.


def test_constrained_path_fails_like_java_when_an_owned_id_no_longer_exists() -> None:
    # The kept t-7 stalls Java's merge walk, so every partition looks unassigned and the
    # quota bookkeeping ends in IllegalStateException.
    grp = group(("a", sub("t u", "t-7 t-0", gen=1)), ("b", sub("t u", "u-0", gen=1)))
    with pytest.raises(AssignorError) as err:
        CooperativeStickyAssignor().assign(counts(t=3, u=2), grp)
    assert err.value.java_exception == "IllegalStateException"


def test_general_path_keeps_a_vanished_owned_id_like_java() -> None:
    grp = group(("a", sub("t u", "t-7 t-0", gen=1)), ("b", sub("t", "u-0", gen=1)))
    assert run(CooperativeStickyAssignor(), counts(t=3, u=2), grp) == {"a": "t-7 u-1", "b": "t-1 t-2"}
