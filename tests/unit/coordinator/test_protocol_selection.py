"""Protocol selection and hash-map orders (spec §7, §18.12; flavor differences §15 #1-#2)."""

from __future__ import annotations

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import LeaveMember
from rebalance_lab.coordinator.classic.ordering import OrderedMembers, champ_order, java_hashmap_order, spread
from rebalance_lab.coordinator.classic.records import GenerationStarted
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode
J, S = Flavor.KAFKA_4, Flavor.KAFKA_3


def selected(flavor: Flavor, *preferences: tuple[str, ...]) -> str:
    ctx = GroupContext(flavor)
    calls = [ctx.join(version=3, names=p) for p in preferences]
    ctx.run_until_done(calls)
    assert all(c.error is E.NONE for c in calls)
    return calls[0].result.protocol_name  # type: ignore[no-any-return]


@pytest.mark.parametrize(("flavor", "winner"), [(J, "range"), (S, "roundrobin")])
def test_two_member_tie_goes_to_the_flavor_s_map_order(flavor: Flavor, winner: str) -> None:  # 18.12 #70
    assert selected(flavor, ("range", "roundrobin"), ("roundrobin", "range")) == winner


@pytest.mark.parametrize("flavor", list(Flavor))
def test_a_third_vote_breaks_the_tie_for_both_flavors(flavor: Flavor) -> None:  # 18.12 #70
    prefs = (("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin", "range"))
    assert selected(flavor, *prefs) == "roundrobin"


ALL4 = ("sticky", "range", "roundrobin", "cooperative-sticky")


@pytest.mark.parametrize(
    ("preferences", "java", "scala"),
    [
        ((("cooperative-sticky", "range"), ("range", "cooperative-sticky")), "range", "cooperative-sticky"),
        ((("sticky", "range"), ("range", "sticky")), "sticky", "range"),
        ((("cooperative-sticky", "range"), ("range",)), "range", "range"),
        (tuple(ALL4[i:] + ALL4[:i] for i in range(4)), "sticky", "cooperative-sticky"),
        ((("protocol1", "protocol2"), ("protocol2", "protocol1")), "protocol2", "protocol2"),
    ],
)
def test_worked_examples_of_section_7_4(preferences: tuple[tuple[str, ...], ...], java: str,
                                        scala: str) -> None:
    assert selected(J, *preferences) == java
    assert selected(S, *preferences) == scala


@pytest.mark.parametrize(("flavor", "winner"), [(J, "range"), (S, "roundrobin")])
def test_two_two_one_votes_tie_break(flavor: Flavor, winner: str) -> None:  # §7.4 "2-2-1"
    from rebalance_lab.coordinator.classic.protocol_selection import tie_break

    votes = ["range", "range", "roundrobin", "roundrobin", "sticky"]
    counts = {"range": 2, "roundrobin": 2, "sticky": 1}
    assert tie_break(flavor, counts, votes) == winner


def test_join_complete_record_carries_candidates_votes_and_winner() -> None:
    ctx = GroupContext()
    a = ctx.join(version=3, names=("range", "roundrobin", "sticky"))
    b = ctx.join(version=3, names=("roundrobin", "range"))
    ctx.run_until_done([a, b])
    started = ctx.records_of(GenerationStarted)[-1]
    assert set(started.candidates) == {"range", "roundrobin"}
    assert dict(started.votes) == {a.result.member_id: "range", b.result.member_id: "roundrobin"}
    assert started.protocol == "range" and started.leader_id == a.result.leader


def test_java_bucket_indices_of_common_assignor_names() -> None:  # §7.2 table
    expected = {"uniform": 1, "sticky": 8, "range": 9, "roundrobin": 10, "protocol2": 13, "protocol1": 14,
                "consumer": 14, "cooperative-sticky": 15}
    assert {n: spread(n) & 15 for n in expected} == expected


def test_tie_orders_of_both_flavors() -> None:  # §7.2
    names = ["cooperative-sticky", "roundrobin", "range", "sticky"]
    assert java_hashmap_order(names) == ["sticky", "range", "roundrobin", "cooperative-sticky"]
    assert champ_order(names) == ["cooperative-sticky", "roundrobin", "range", "sticky"]


def test_java_member_map_keeps_insertion_order_inside_a_bucket_and_grows_on_the_13th_key() -> None:
    members: OrderedMembers[int] = OrderedMembers(J)
    members.put("BB", 1)
    members.put("Aa", 2)  # same String hash as "BB": same bucket, after it
    assert members.keys() == ["BB", "Aa"]
    members.pop("BB")
    members.put("BB", 3)  # remove + put moves it to the end of its bucket
    assert members.keys() == ["Aa", "BB"]
    keys = [f"k{i}" for i in range(13)]
    big: OrderedMembers[int] = OrderedMembers(J)
    for k in keys:
        big.put(k, 0)
    assert big.keys() == sorted(keys, key=lambda k: spread(k) & 31)


def test_scala_member_map_orders_a_bucket_by_hash_and_grows_on_the_12th_key() -> None:
    keys = [f"k{i}" for i in range(12)]
    members: OrderedMembers[int] = OrderedMembers(S)
    for k in reversed(keys):
        members.put(k, 0)
    assert members.keys() == sorted(keys, key=lambda k: (spread(k) & 31, spread(k)))


@pytest.mark.parametrize("flavor", list(Flavor))
def test_leader_removal_hands_leadership_to_the_first_member_in_map_order(flavor: Flavor) -> None:  # §3.5
    ctx = GroupContext(flavor)
    ids = ctx.stable_group(4)
    leader = ids[0]
    ctx.leave(LeaveMember(leader))
    remaining = [m for m in ids if m != leader]
    members: OrderedMembers[int] = OrderedMembers(flavor)
    for m in ids:
        members.put(m, 0)
    members.pop(leader)
    assert ctx.view().leader_id == members.first_key()
    assert list(ctx.view().member_ids) == members.keys() and set(members.keys()) == set(remaining)


@pytest.mark.parametrize("flavor", list(Flavor))
def test_leader_member_list_and_describe_follow_member_map_order(flavor: Flavor) -> None:  # §7.3
    ctx = GroupContext(flavor)
    calls = [ctx.join(version=3) for _ in range(5)]
    ctx.run_until_done(calls)
    leader_reply = next(c.result for c in calls if c.result.members)
    order = [m.member_id for m in leader_reply.members]
    assert order == list(ctx.view().member_ids)
    ctx.sync_all([leader_reply.leader, *[m for m in order if m != leader_reply.leader]])
    assert [m.member_id for m in ctx.describe().members] == order
