"""DescribeGroups, ListGroups, DeleteGroups (spec §11, §18.9; flavor difference §15 #5)."""

from __future__ import annotations

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import INT_MIN
from rebalance_lab.coordinator.classic.records import GroupDeleted
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


def test_describe_stable_group_shows_protocol_metadata_and_assignments() -> None:  # 18.9 #59
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    d = ctx.describe()
    assert (d.error, d.state, d.protocol_type, d.protocol_data) == (E.NONE, "Stable", "consumer", "range")
    assert [m.member_id for m in d.members] == list(ctx.view().member_ids)
    assert {m.member_id: (m.metadata, m.assignment) for m in d.members} == {
        leader: (b"meta", leader.encode()), follower: (b"meta", follower.encode())}
    assert d.members[0].client_host == "/127.0.0.1" and d.authorized_operations == INT_MIN


def test_java_describe_while_rebalancing_keeps_the_stored_assignment() -> None:  # 18.9 #59, §15 #5
    ctx = GroupContext(Flavor.KAFKA_4)
    [m] = ctx.stable_group(1)
    ctx.join(version=3)  # a new member: PreparingRebalance
    d = ctx.describe()
    assert (d.state, d.protocol_data) == ("PreparingRebalance", "")
    old = next(x for x in d.members if x.member_id == m)
    assert (old.metadata, old.assignment) == (b"", m.encode())


def test_scala_describe_while_rebalancing_shows_empty_assignments() -> None:  # §15 #5
    ctx = GroupContext(Flavor.KAFKA_3)
    [m] = ctx.stable_group(1)
    ctx.join(version=3)
    old = next(x for x in ctx.describe().members if x.member_id == m)
    assert (old.metadata, old.assignment) == (b"", b"")


def test_describe_unknown_group_is_a_dead_placeholder_before_v6() -> None:  # 18.9 #59
    ctx = GroupContext()
    d = ctx.describe("nope", version=5)
    assert (d.error, d.state, d.protocol_type, d.protocol_data, d.members) == (E.NONE, "Dead", "", "", ())


def test_describe_unknown_group_on_v6_is_group_id_not_found() -> None:  # §11.1, KIP-1043
    ctx = GroupContext()
    d = ctx.describe("nope", version=6)
    assert d.error is E.GROUP_ID_NOT_FOUND and d.error_message == "Group nope not found."


@pytest.mark.parametrize(("flavor", "ops"), [(Flavor.KAFKA_4, 3400), (Flavor.KAFKA_3, 328)])
def test_describe_authorized_operations_when_requested(flavor: Flavor, ops: int) -> None:
    ctx = GroupContext(flavor)
    ctx.stable_group(1)
    assert ctx.describe(ops=True).authorized_operations == ops


def test_describe_never_shows_pending_members() -> None:
    ctx = GroupContext()
    ctx.join(version=4)
    assert ctx.describe().members == () and ctx.describe().state == "Empty"


def test_list_groups_filters_by_lower_case_state_and_type() -> None:  # 18.9 #60
    ctx = GroupContext()
    ctx.stable_group(1, group="stable")
    ctx.join(version=4, group="pending-only")
    assert {g.group_id for g in ctx.list_groups(("empty",)).groups} == {"pending-only"}
    assert {g.group_id for g in ctx.list_groups(("Empty",)).groups} == {"pending-only"}
    assert {g.group_id for g in ctx.list_groups(("stable",)).groups} == {"stable"}
    assert {g.group_id for g in ctx.list_groups(types=("classic",)).groups} == {"stable", "pending-only"}
    assert ctx.list_groups(types=("consumer",)).groups == ()
    assert ctx.list_groups(("bogus",)).groups == ()
    pending = next(g for g in ctx.list_groups().groups if g.group_id == "pending-only")
    assert (pending.state, pending.protocol_type) == ("Empty", "")


def test_java_trims_state_filters_and_scala_does_not() -> None:  # §11.2
    java, scala = GroupContext(Flavor.KAFKA_4), GroupContext(Flavor.KAFKA_3)
    for ctx in (java, scala):
        ctx.join(version=4)
    assert len(java.list_groups((" empty ",)).groups) == 1
    assert scala.list_groups((" empty ",)).groups == ()


def test_delete_groups_by_state() -> None:  # 18.9 #61
    ctx = GroupContext()
    ctx.stable_group(1, group="stable")
    ctx.completing_group(1, group="completing")
    ctx.join(version=3, group="preparing")
    ctx.join(version=4, group="empty")
    result = ctx.delete("stable", "completing", "preparing", "empty", "unknown", "empty")
    assert result == {"stable": E.NON_EMPTY_GROUP, "completing": E.NON_EMPTY_GROUP,
                      "preparing": E.NON_EMPTY_GROUP, "empty": E.NONE, "unknown": E.GROUP_ID_NOT_FOUND}
    assert ctx.coordinator.group("empty") is None
    assert ctx.records_of(GroupDeleted)[-1].group_id == "empty"
    assert ctx.describe("empty").state == "Dead"
