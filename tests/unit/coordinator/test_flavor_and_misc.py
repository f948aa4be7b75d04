"""Remaining flavor differences (§15 #6), traps (§16.10 for SyncGroup, §16.13-14) and odd corners."""

from __future__ import annotations

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.routing import partition_for
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


@pytest.mark.parametrize(("flavor", "sync_error"), [(Flavor.KAFKA_4, E.COORDINATOR_LOAD_IN_PROGRESS),
                                                    (Flavor.KAFKA_3, E.REBALANCE_IN_PROGRESS)])
def test_sync_while_the_coordinator_is_loading(flavor: Flavor, sync_error: ErrorCode) -> None:  # §15 #6
    ctx = GroupContext(flavor)
    [m] = ctx.completing_group(1)
    ctx.coordinator.set_loading(True)
    assert ctx.sync(m, 1).error is sync_error
    assert ctx.heartbeat(m, 1) is E.NONE  # a blind success on both coordinators (§9.1 rule 2)
    join = ctx.join(m).result
    assert (join.error, join.member_id, join.generation_id) == (E.COORDINATOR_LOAD_IN_PROGRESS, "", -1)
    assert ctx.heartbeat(m, 1, group="") is E.INVALID_GROUP_ID
    ctx.coordinator.set_loading(False)
    assert ctx.sync(m, 1, assignments={}).error is E.NONE


def test_heartbeat_to_a_dead_group_is_coordinator_not_available() -> None:  # 18.5 #35
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    ctx.coordinator._core.groups["g"].state = GroupState.DEAD  # Dead is transient in Kafka
    assert ctx.heartbeat(m, 1) is E.COORDINATOR_NOT_AVAILABLE
    assert ctx.join(m).error is E.COORDINATOR_NOT_AVAILABLE
    assert ctx.sync(m, 1).error is E.COORDINATOR_NOT_AVAILABLE


def test_duplicate_sync_orphans_the_first_parked_request() -> None:  # trap 10
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    first = ctx.sync(follower, 1)
    second = ctx.sync(follower, 1)
    ctx.sync(leader, 1, assignments={follower: b"x"})
    assert second.result.assignment == b"x"
    assert not first.done


@pytest.mark.parametrize(
    ("group_id", "partition"),
    [("", 0), ("group-id", 13), ("my-group", 12), ("test-group", 12), ("console-consumer-12345", 6),
     ("Aa", 12), ("BB", 12), ("polygenelubricants", 0), ("été", 42), ("\U0001f600", 49)],
)
def test_group_partition_vectors(group_id: str, partition: int) -> None:  # 18.11 #69, trap 14
    assert partition_for(group_id, 50) == partition


def test_static_member_ids_use_the_instance_id_even_with_a_client_id() -> None:  # §3.6
    ctx = GroupContext()
    call = ctx.join(version=5, instance="inst", client_id="cid")
    assert ctx.view().member_ids[0].startswith("inst-")
    ctx.sleep(3000)
    assert call.result.member_id.startswith("inst-")


def test_null_client_id_yields_a_member_id_starting_with_a_dash() -> None:  # §1.3
    ctx = GroupContext()
    assert ctx.join(version=4, client_id="").result.member_id.startswith("-")


def test_timers_cancelled_by_a_timer_firing_at_the_same_instant_do_not_run() -> None:
    ctx = GroupContext()
    leader, _follower = ctx.stable_group(2, session_ms=5000, rebalance_ms=5000)
    ctx.join(leader, session_ms=5000, rebalance_ms=5000)  # parked; the follower never rejoins
    ctx.sleep(5000)  # the follower's session and the join timer are both due: one outcome only
    view = ctx.view()
    assert view.member_ids == (leader,) and view.generation_id == 2
