"""Hypothesis properties of all four assignors (STYLE.md principle 10)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sticky_support import check_validity_and_balance

from rebalance_lab.clients.assignors import (
    AssignorError,
    ClusterView,
    CooperativeStickyAssignor,
    GroupSubscription,
    PartitionMeta,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from rebalance_lab.protocol.consumer_protocol import encode_sticky_user_data

SETTINGS = settings(max_examples=60, deadline=None)
TOPICS = ["t0", "t1", "t2", "t3"]
RACKS = ["a", "b", "c", None]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterView:
    topics = {}
    for topic in draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True)):
        n = draw(st.integers(0, 7))
        topics[topic] = tuple(
            PartitionMeta(i, tuple(draw(st.lists(st.sampled_from(RACKS), max_size=2)))) for i in range(n)
        )
    return ClusterView(topics)


@st.composite
def groups(
    draw: st.DrawFn, equal: bool | None = None, min_members: int = 1, with_racks: bool = True, allow_empty: bool = True
) -> GroupSubscription:
    """Members in JoinGroup order. ``allow_empty=False`` keeps every subscription non-empty:
    an empty one iterated first sends sticky down the constrained path (quirk Q1, tested
    on its own), where members can receive topics they never subscribed to."""
    ids = draw(
        st.lists(st.text("abcm-0123456789", min_size=1, max_size=4), min_size=min_members, max_size=6, unique=True)
    )
    shared = tuple(draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True)))
    members = {}
    for member in ids:
        min_topics = 0 if allow_empty else 1
        topics = (
            shared
            if equal
            else tuple(draw(st.lists(st.sampled_from(TOPICS), min_size=min_topics, max_size=4, unique=True)))
        )
        members[member] = Subscription(
            topics=topics,
            rack_id=draw(st.sampled_from(RACKS)) if with_racks else None,
            group_instance_id=draw(st.none() | st.sampled_from(["i1", "i2", "i3"])),
        )
    return GroupSubscription(members)


def all_partitions(view: ClusterView, grp: GroupSubscription) -> set[TopicPartition]:
    subscribed = {t for s in grp.members.values() for t in s.topics}
    return {TopicPartition(t, p.partition) for t, ps in view.topics.items() if t in subscribed for p in ps}


def check_exactly_once(view: ClusterView, grp: GroupSubscription, lists: dict[str, tuple[TopicPartition, ...]]) -> None:
    assert list(lists) == list(grp.members)
    flat = [tp for partitions in lists.values() for tp in partitions]
    assert len(flat) == len(set(flat)), "a partition was assigned twice"
    assert set(flat) == all_partitions(view, grp), "every subscribed partition, and nothing else"
    for member, partitions in lists.items():
        assert all(tp.topic in grp.members[member].topics for tp in partitions)


@SETTINGS
@given(view=clusters(), grp=groups())
def test_range_assigns_each_subscribed_partition_once_and_balances_each_topic(
    view: ClusterView, grp: GroupSubscription
) -> None:
    prefer = bool(len(grp.members) % 2)
    lists = {m: a.partitions for m, a in RangeAssignor(prefer).assign(view, grp).items()}
    check_exactly_once(view, grp, lists)
    for topic in view.topics:
        subscribers = [m for m, s in grp.members.items() if topic in s.topics]
        counts = [sum(tp.topic == topic for tp in lists[m]) for m in subscribers]
        assert not counts or max(counts) - min(counts) <= 1


@SETTINGS
@given(view=clusters(), grp=groups())
def test_roundrobin_assigns_each_subscribed_partition_once(view: ClusterView, grp: GroupSubscription) -> None:
    lists = {m: a.partitions for m, a in RoundRobinAssignor().assign(view, grp).items()}
    check_exactly_once(view, grp, lists)


@SETTINGS
@given(view=clusters(), grp=groups(equal=True))
def test_roundrobin_balances_equal_subscriptions(view: ClusterView, grp: GroupSubscription) -> None:
    sizes = [len(a.partitions) for a in RoundRobinAssignor().assign(view, grp).values()]
    assert max(sizes) - min(sizes) <= 1


def _sticky_round(flavour: type, view: ClusterView, grp: GroupSubscription) -> dict[str, tuple[TopicPartition, ...]]:
    try:
        return {m: a.partitions for m, a in flavour().assign(view, grp).items()}
    except AssignorError as err:
        # Java's own failure modes are reproduced, never invented (quirk Q5 only here).
        assert err.java_exception == "NullPointerException"
        raise


def _owning(
    flavour: type, grp: GroupSubscription, lists: dict[str, tuple[TopicPartition, ...]], gen: int
) -> GroupSubscription:
    """The next JoinGroup: every member reports what it now owns, in generation ``gen``."""
    members = {}
    for m, s in grp.members.items():
        if flavour is StickyAssignor:
            members[m] = Subscription(s.topics, encode_sticky_user_data(lists[m], gen), rack_id=s.rack_id)
        else:
            members[m] = Subscription(s.topics, None, lists[m], gen, s.rack_id)
    return GroupSubscription(members)


@SETTINGS
@given(
    view=clusters(), grp=groups(allow_empty=False), flavour=st.sampled_from([StickyAssignor, CooperativeStickyAssignor])
)
def test_fresh_sticky_assignment_is_complete_valid_and_balanced(
    view: ClusterView, grp: GroupSubscription, flavour: type
) -> None:
    lists = _sticky_round(flavour, view, grp)
    check_exactly_once(view, grp, lists)
    check_validity_and_balance(grp.members, {m: list(v) for m, v in lists.items()})


@SETTINGS
@given(
    view=clusters(),
    grp=groups(equal=True, with_racks=False),
    flavour=st.sampled_from([StickyAssignor, CooperativeStickyAssignor]),
)
def test_sticky_with_equal_subscriptions_is_fully_balanced_and_stable(
    view: ClusterView, grp: GroupSubscription, flavour: type
) -> None:
    lists = _sticky_round(flavour, view, grp)
    sizes = [len(v) for v in lists.values()]
    assert max(sizes) - min(sizes) <= 1
    again = _sticky_round(flavour, view, _owning(flavour, grp, lists, 1))
    assert {m: set(v) for m, v in again.items()} == {m: set(v) for m, v in lists.items()}, "nothing moves"


@SETTINGS
@given(view=clusters(), grp=groups(equal=True, min_members=2, with_racks=False), data=st.data())
def test_sticky_keeps_partitions_of_members_that_stay_when_one_leaves(
    view: ClusterView, grp: GroupSubscription, data: st.DataObject
) -> None:
    lists = _sticky_round(StickyAssignor, view, grp)
    leaver = data.draw(st.sampled_from(list(grp.members)))
    stayers = GroupSubscription({m: s for m, s in grp.members.items() if m != leaver})
    after = _sticky_round(StickyAssignor, view, _owning(StickyAssignor, stayers, lists, 1))
    quota = -(-sum(len(v) for v in lists.values()) // len(stayers.members))
    for member, partitions in after.items():
        kept = set(lists[member]) & set(partitions)
        assert len(kept) == min(len(lists[member]), quota), f"{member} lost partitions it could keep"


@SETTINGS
@given(view=clusters(), first=groups(allow_empty=False), second=groups(allow_empty=False))
def test_cooperative_never_gives_a_partition_away_in_the_round_it_is_revoked(
    view: ClusterView, first: GroupSubscription, second: GroupSubscription
) -> None:
    lists = _sticky_round(CooperativeStickyAssignor, view, first)
    # Members of the second group that were in the first report what they own.
    members = {
        m: Subscription(s.topics, None, lists.get(m, ()), 1 if m in lists else None, s.rack_id)
        for m, s in second.members.items()
    }
    grp = GroupSubscription(members)
    # Kafka's own cases converge within 4 rounds; rack-aware general-path inputs can need more.
    for _ in range(8):
        try:
            result = _sticky_round(CooperativeStickyAssignor, view, grp)
        except AssignorError:
            return
        owners = {tp: m for m, s in grp.members.items() for tp in s.owned_partitions}
        revoked = {tp for tp, m in owners.items() if tp not in result[m]}
        moved = {tp for m, v in result.items() for tp in v if owners.get(tp, m) != m}
        assert not revoked & moved
        if not revoked:
            check_exactly_once(view, grp, result)
            return
        grp = GroupSubscription(
            {m: Subscription(s.topics, None, result[m], 2, s.rack_id) for m, s in grp.members.items()}
        )
    raise AssertionError("cooperative rebalancing did not converge in 8 rounds")


@SETTINGS
@given(view=clusters(), grp=groups(allow_empty=False))
def test_eager_and_cooperative_agree_on_a_fresh_group(view: ClusterView, grp: GroupSubscription) -> None:
    assert _sticky_round(StickyAssignor, view, grp) == _sticky_round(CooperativeStickyAssignor, view, grp)


@SETTINGS
@given(view=clusters(), grp=groups())
def test_assignors_are_deterministic(view: ClusterView, grp: GroupSubscription) -> None:
    for flavour in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor):
        assert flavour().assign(view, grp) == flavour().assign(view, grp)
    assert list(RangeAssignor().assign(view, grp)) == list(grp.members)
