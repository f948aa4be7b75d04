"""Hypothesis properties of the KIP-848 server assignors (STYLE.md principle 10): each partition at most
once, every subscribed partition assigned, the homogeneous uniform balance bound, stickiness over a
recomputation, and a recomputation with nothing changed changes nothing."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.coordinator.consumer.assignors import MemberSubscription, assign
from tests.unit.consumer_assignors.support import Topics, member, subscription_type, topics

SETTINGS = settings(max_examples=80, deadline=None)
NAMES = ["t0", "t1", "t2", "t3"]


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool = False) -> tuple[Topics, list[MemberSubscription]]:
    image = topics(**{name: draw(st.integers(0, 24)) for name in NAMES})
    count = draw(st.integers(1, 9))
    ids = draw(st.lists(st.text("abcxyz-0123456789", min_size=1, max_size=8), min_size=count, max_size=count,
                        unique=True))
    shared = draw(st.lists(st.sampled_from(NAMES), min_size=1, unique=True))
    members = []
    for member_id in ids:
        names = shared if homogeneous else draw(st.lists(st.sampled_from(NAMES), unique=True))
        static = draw(st.one_of(st.none(), st.text("pq", min_size=1, max_size=3)))
        members.append(member(member_id, names, image, instance_id=static))
    return image, members


def _partition_counts(result: dict[str, dict[object, frozenset[int]]]) -> Counter[tuple[object, int]]:
    return Counter((t, p) for assignment in result.values() for t, parts in assignment.items() for p in parts)


def _subscribed(image: Topics, members: list[MemberSubscription]) -> set[tuple[object, int]]:
    return {(t, p) for m in members for t in m.subscribed_topic_ids for p in range(image[t].num_partitions)}


def _again(members: list[MemberSubscription], result: dict[str, dict[object, frozenset[int]]]) -> list[
    MemberSubscription
]:
    """The same members with the result as their current target (only changed members get a new record)."""
    return [
        MemberSubscription(m.member_id, m.instance_id, m.rack_id, m.subscribed_topic_ids,
                           result.get(m.member_id, {}), m.subscription_order)
        for m in members
    ]


@SETTINGS
@given(groups(), st.sampled_from(["uniform", "range"]))
def test_every_subscribed_partition_is_assigned_exactly_once(
    group: tuple[Topics, list[MemberSubscription]], name: str
) -> None:
    image, members = group
    result = assign(name, members, subscription_type(members), image)
    counts = _partition_counts(result)
    assert all(n == 1 for n in counts.values())
    assert set(counts) == _subscribed(image, members)
    for m in members:
        assert set(result.get(m.member_id, {})) <= m.subscribed_topic_ids


@SETTINGS
@given(groups(homogeneous=True))
def test_homogeneous_uniform_sizes_differ_by_at_most_one(group: tuple[Topics, list[MemberSubscription]]) -> None:
    image, members = group
    first = assign("uniform", members, subscription_type(members), image)
    for result in (first, assign("uniform", _again(members, first), subscription_type(members), image)):
        sizes = [sum(len(p) for p in result.get(m.member_id, {}).values()) for m in members]
        assert max(sizes) - min(sizes) <= 1


@SETTINGS
@given(groups(homogeneous=True), st.integers(0, 3), st.integers(1, 8))
def test_homogeneous_uniform_members_keep_up_to_their_quota_when_members_join_and_topics_grow(
    group: tuple[Topics, list[MemberSubscription]], joining: int, growth: int
) -> None:
    image, members = group
    before = assign("uniform", members, subscription_type(members), image)
    grown = topics(**{t.name: t.num_partitions + growth for t in image.values()})
    names = list(members[0].subscription_order or ())
    later = _again(members, before) + [member(f"new-{i}", names, grown) for i in range(joining)]
    after = assign("uniform", later, subscription_type(later), grown)
    total = sum(grown[t].num_partitions for t in members[0].subscribed_topic_ids)
    min_quota = total // len(later)
    for m in members:
        old = {(t, p) for t, parts in before.get(m.member_id, {}).items() for p in parts}
        new = {(t, p) for t, parts in after.get(m.member_id, {}).items() for p in parts}
        assert len(old & new) >= min(len(old), min_quota)


@SETTINGS
@given(groups(), st.sampled_from(["uniform", "range"]))
def test_recomputing_with_nothing_changed_changes_nothing(
    group: tuple[Topics, list[MemberSubscription]], name: str
) -> None:
    image, members = group
    first = assign(name, members, subscription_type(members), image)
    second = assign(name, _again(members, first), subscription_type(members), image)
    assert _partition_counts(second) == _partition_counts(first)
    for member_id, assignment in first.items():
        assert {t: set(p) for t, p in second.get(member_id, {}).items() if p} == {
            t: set(p) for t, p in assignment.items() if p
        }
