"""``evolve`` (the member copy on the heartbeat path) builds what ``dataclasses.replace`` builds."""

from __future__ import annotations

import dataclasses
import uuid

from rebalance_lab.coordinator.consumer.model import ConsumerMember, MemberChanges, MemberState, evolve


def test_member_changes_names_every_field_of_a_member() -> None:
    assert set(MemberChanges.__annotations__) == {f.name for f in dataclasses.fields(ConsumerMember)}


def test_an_evolved_member_equals_the_replaced_one_and_leaves_the_original_alone() -> None:
    topic = uuid.uuid4()
    member = ConsumerMember("m", subscribed_topic_names=frozenset({"a"}), assigned={topic: {0: 1}})
    changes: MemberChanges = dict(member_epoch=5, previous_member_epoch=4, state=MemberState.UNREVOKED_PARTITIONS,
                                  assigned={}, pending_revocation={topic: {0: 1}}, rack_id="r")
    evolved = evolve(member, **changes)
    assert evolved == dataclasses.replace(member, **changes)
    assert (member.member_epoch, member.assigned, member.rack_id) == (0, {topic: {0: 1}}, None)
    assert type(evolved) is ConsumerMember
