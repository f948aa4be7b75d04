from __future__ import annotations

import pytest

from rebalance_lab.clients.assignors.types import Assignment, ClusterView, Subscription, TopicPartition
from rebalance_lab.clients.member import leader
from rebalance_lab.clients.member.calls import JoinedMember
from rebalance_lab.clients.member.subscription import SubscriptionSpec, build_protocols, is_cooperative
from rebalance_lab.protocol import consumer_protocol as cp

from .member_helpers import FirstTakesAll


def _member(member_id: str, topics: tuple[str, ...], instance: str | None = None) -> JoinedMember:
    return JoinedMember(member_id, instance, cp.encode_subscription(Subscription(topics)))


def test_group_subscription_keeps_member_order_and_attaches_instance_ids() -> None:
    group = leader.group_subscription([_member("b", ("t",), "inst-b"), _member("a", ("u", "t"))])
    assert list(group.members) == ["b", "a"]
    assert group.members["b"].group_instance_id == "inst-b"
    assert leader.subscribed_topics(group) == ("t", "u")


def test_every_member_gets_an_assignment_even_if_the_assignor_left_it_out() -> None:
    group = leader.group_subscription([_member("a", ("t",)), _member("b", ("t",))])
    result = leader.compute_assignment(FirstTakesAll(), ClusterView.of_counts({"t": 2}), group)
    assert cp.decode_assignment(result["a"]).partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert cp.decode_assignment(result["b"]) == Assignment(())


def test_an_unknown_assignor_name_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        leader.resolve_assignor("no-such-assignor-anywhere")


def test_sticky_user_data_is_null_until_the_first_assignment() -> None:
    spec = SubscriptionSpec(("t",), ("sticky", "range"))
    before = build_protocols(spec, (), -1, has_assignment=False)
    assert cp.decode_subscription(before[0][1]).user_data is None
    after = build_protocols(spec, (TopicPartition("t", 0),), 2, has_assignment=True)
    data = cp.decode_sticky_user_data(cp.decode_subscription(after[0][1]).user_data)
    assert data.partitions == (TopicPartition("t", 0),) and data.generation == 2
    assert cp.decode_subscription(after[1][1]).user_data is None


def test_cooperative_only_when_every_assignor_is_cooperative() -> None:
    assert is_cooperative(["cooperative-sticky"])
    assert not is_cooperative(["cooperative-sticky", "range"])
    assert not is_cooperative([])
