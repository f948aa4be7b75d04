"""The light group member against an in-process emulator (real TCP on loopback)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    TopicPartition,
)
from rebalance_lab.clients.member import GroupMember, Phase
from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.coordinator.server import EmulatorServer

pytestmark = pytest.mark.skipif(
    not {11, 12, 13, 14} <= set(load_handlers()),
    reason="the group coordinator handlers (JoinGroup, Heartbeat, LeaveGroup, SyncGroup) are not registered",
)

TOPIC_PARTITIONS = 6
ALL = {TopicPartition("t", p) for p in range(TOPIC_PARTITIONS)}


class FirstTakesAll:
    """A toy assignor object (not a registered name): the first member gets everything."""

    name = "toy"

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]:
        first = next(iter(group.members))
        return {first: Assignment(tuple(TopicPartition(t, p.partition) for t, ps in cluster.topics.items()
                                        for p in ps))}


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    config = EmulatorConfig(
        port=0,
        topics=(("t", TOPIC_PARTITIONS),),
        group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100),
    )
    async with EmulatorServer(config) as running:
        yield running


@pytest.fixture
def bootstrap(server: EmulatorServer) -> str:
    return server.bootstrap_servers


def member(bootstrap: str, name: str, **kw: object) -> GroupMember:
    settings: dict[str, object] = {"client_id": name, "session_timeout_ms": 6_000, "rebalance_timeout_ms": 5_000,
                                   "heartbeat_interval_ms": 50, **kw}
    return GroupMember(bootstrap, "g", ["t"], **settings)  # type: ignore[arg-type]


async def test_a_single_member_leads_and_takes_every_partition(bootstrap: str) -> None:
    a = member(bootstrap, "a", assignors=["range"])
    try:
        assert set(await a.join()) == ALL
        assert (a.is_leader, a.generation_id, a.protocol_name, a.phase) == (True, 1, "range", Phase.STABLE)
        assert a.member_id.startswith("a-")
    finally:
        await a.close(leave=True)


async def test_a_leader_can_run_an_assignor_object_it_was_given(bootstrap: str) -> None:
    a = member(bootstrap, "a", assignors=[FirstTakesAll()])
    try:
        assert set(await a.join()) == ALL and a.protocol_name == "toy"
    finally:
        await a.close(leave=True)


async def test_a_second_member_makes_the_first_rejoin_through_its_heartbeat(bootstrap: str) -> None:
    a, b = member(bootstrap, "a"), member(bootstrap, "b")
    try:
        await a.join()
        b_partitions = await b.join()
        await a.wait_for_generation(2, timeout_s=10)
        assert a.generation_id == b.generation_id == 2
        assert set(a.assignment) | set(b_partitions) == ALL
        assert not set(a.assignment) & set(b_partitions)
        assert a.is_leader and not b.is_leader
    finally:
        await asyncio.gather(a.close(leave=True), b.close(leave=True))


async def test_after_a_leave_the_remaining_member_gets_everything_back(bootstrap: str) -> None:
    a, b = member(bootstrap, "a"), member(bootstrap, "b")
    try:
        await a.join()
        await b.join()
        await a.wait_for_generation(2, timeout_s=10)
        assert await b.leave() is not None
        await a.wait_for_generation(3, timeout_s=10)
        assert set(a.assignment) == ALL
    finally:
        await asyncio.gather(a.close(leave=True), b.close())


async def test_a_crashed_member_is_dropped_after_its_session_timeout(bootstrap: str) -> None:
    # b's session: short, but 20 heartbeats long (300 ms expired b while alive once on a loaded machine)
    a, b = member(bootstrap, "a"), member(bootstrap, "b", session_timeout_ms=1_000)
    try:
        await a.join()
        await b.join()
        await a.wait_for_generation(2, timeout_s=10)
        crashed_at = a.generation_id
        await b.close(leave=False)  # no LeaveGroup: the coordinator must notice by itself
        await a.wait_for_generation(crashed_at + 1, timeout_s=10)
        assert set(a.assignment) == ALL
    finally:
        await a.close(leave=True)


async def test_a_restarted_static_leader_gets_its_assignment_back_without_a_rebalance(bootstrap: str) -> None:
    first = member(bootstrap, "a", group_instance_id="instance-a")
    await first.join()
    generation, old_id = first.generation_id, first.member_id
    await first.close(leave=False)
    again = member(bootstrap, "a", group_instance_id="instance-a")
    try:
        assert set(await again.join()) == ALL
        assert again.generation_id == generation  # KIP-345: same generation, no rebalance
        assert again.member_id != old_id
    finally:
        await again.close(leave=True)


async def test_cooperative_members_converge_after_an_incremental_rebalance(bootstrap: str) -> None:
    a = member(bootstrap, "a", assignors=["cooperative-sticky"])
    b = member(bootstrap, "b", assignors=["cooperative-sticky"])
    try:
        await a.join()
        await b.join()
        for _ in range(100):  # KIP-429: a revokes first, then everybody rejoins once more
            if a.phase is Phase.STABLE and b.phase is Phase.STABLE and len(a.assignment) == 3 == len(b.assignment):
                break
            await asyncio.sleep(0.05)
        assert set(a.assignment) | set(b.assignment) == ALL
        assert len(a.assignment) == len(b.assignment) == 3
    finally:
        await asyncio.gather(a.close(leave=True), b.close(leave=True))


async def test_many_members_in_one_process_need_no_task_while_stable(bootstrap: str) -> None:
    members = [member(bootstrap, f"m{i}", heartbeat_interval_ms=200) for i in range(30)]
    try:
        await members[0].join()
        await asyncio.gather(*(m.join() for m in members[1:]))
        for _ in range(200):
            generations = {m.generation_id for m in members}
            if len(generations) == 1 and all(m.phase is Phase.STABLE for m in members):
                break
            await asyncio.sleep(0.05)
        assert all(m.phase is Phase.STABLE for m in members)
        assert len({m.generation_id for m in members}) == 1
        owned = [tp for m in members for tp in m.assignment]
        assert set(owned) == ALL and len(owned) == len(ALL)
        member_tasks = [t for t in asyncio.all_tasks() if "GroupMember" in getattr(t.get_coro(), "__qualname__", "")]
        assert member_tasks == [] or all(t.done() for t in member_tasks)
    finally:
        await asyncio.gather(*(m.close(leave=True) for m in members))


async def test_concurrent_join_calls_share_one_join(bootstrap: str) -> None:
    a = member(bootstrap, "a")
    try:
        first, second = await asyncio.gather(a.join(), a.join())
        assert first == second and set(first) == ALL and a.generation_id == 1
    finally:
        await a.close(leave=True)


async def test_a_member_whose_connection_drops_finds_the_coordinator_again_and_rejoins(
    server: EmulatorServer,
) -> None:
    a = member(server.bootstrap_servers, "a")
    try:
        await a.join()
        assert server.close_connections() >= 1
        await a.wait_for_generation(2, timeout_s=10)  # the leader's rejoin starts generation 2
        assert set(a.assignment) == ALL
    finally:
        await a.close(leave=True)
