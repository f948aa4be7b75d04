"""End to end without Spark: real groups of light members on the emulator, recorded, read back with the
emulator adapter and replayed by the per-group model.

For each of our four assignors a group goes through joins, a static member, a leave, partition growth
with a forced rebalance, a static restart (no rebalance, KIP-345), a crash (session expiry) and another
join. The replay must give back exactly the emulator's generations (leader, protocol, members and
assignments), and a what-if with the same assignor must reproduce every recorded generation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember, Phase
from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.replay.model import replay_group
from rebalance_lab.replay.sources import SourceContext, parse_file

pytestmark = pytest.mark.skipif(
    not {11, 12, 13, 14} <= set(load_handlers()),
    reason="the group coordinator handlers (JoinGroup, Heartbeat, LeaveGroup, SyncGroup) are not registered",
)

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
TOPICS = {"t": 6, "u": 3}


def light_member(emu: Emulator, name: str, assignor: str, **settings: Any) -> GroupMember:
    options: dict[str, Any] = {"client_id": name, "session_timeout_ms": 6_000, "rebalance_timeout_ms": 5_000,
                               "heartbeat_interval_ms": 50, "assignors": [assignor], **settings}
    return GroupMember(emu.bootstrap_servers, "g", sorted(TOPICS), **options)


async def settled(emu: Emulator, members: list[GroupMember], partitions: int) -> int:
    """Until the group is Stable with exactly ``members``, all in its generation, owning every partition once
    (after a cooperative follow-up too); the generation."""
    last: object = None
    for _ in range(600):
        view = emu.group("g")
        owned = [tp for m in members for tp in m.assignment]
        last = (view and (view.state, view.generation_id, len(view.members)), [m.generation_id for m in members])
        if (view is not None and view.state == "Stable" and len(view.members) == len(members)
                and all(m.phase is Phase.STABLE and m.generation_id == view.generation_id for m in members)
                and len(owned) == partitions and len(set(owned)) == partitions):
            return view.generation_id
        await asyncio.sleep(0.025)
    raise TimeoutError(f"the group did not settle: {last}")


async def play(emu: Emulator, assignor: str) -> None:
    everything = sum(TOPICS.values())
    a = light_member(emu, "a", assignor)
    await a.join()
    await settled(emu, [a], everything)
    b = light_member(emu, "b", assignor)
    await b.join()
    await settled(emu, [a, b], everything)
    s = light_member(emu, "s", assignor, group_instance_id="static-s")
    await s.join()
    await settled(emu, [a, b, s], everything)
    c = light_member(emu, "c", assignor, session_timeout_ms=400)
    await c.join()
    await settled(emu, [a, b, s, c], everything)
    await b.close(leave=True)
    await settled(emu, [a, s, c], everything)
    emu.server.world.cluster.add_partitions("t", 12)  # the leader sees it at its next assignment
    everything += 6
    emu.force_rebalance("g")
    await asyncio.sleep(0.2)
    await settled(emu, [a, s, c], everything)
    await s.close(leave=False)  # a static member restarts: same instance id, a new member id, no rebalance
    s2 = light_member(emu, "s", assignor, group_instance_id="static-s")
    await s2.join()
    await settled(emu, [a, s2, c], everything)
    await c.close(leave=False)  # a crash: the session times out
    await asyncio.sleep(0.6)
    await settled(emu, [a, s2], everything)
    d = light_member(emu, "d", assignor)
    await d.join()
    await settled(emu, [a, s2, d], everything)
    for member in (a, s2, d):
        await member.close(leave=True)


def assignment_of(members: list[dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    return {m["member_id"]: sorted((tp["topic"], tp["partition"]) for tp in m["assignment"]) for m in members}


@pytest.mark.parametrize("assignor", ASSIGNORS)
async def test_the_replay_gives_back_the_emulators_generations_and_reproduces_them(
    tmp_path: Path, assignor: str
) -> None:
    path = tmp_path / "rec.jsonl"
    async with Emulator(topics=list(TOPICS.items()), record_path=str(path), initial_rebalance_delay_ms=0,
                        min_session_timeout_ms=100) as emu:
        await play(emu, assignor)
    events = list(parse_file(path, "emulator", SourceContext(name="rec.jsonl")))
    group = [e for e in events if e.get("group_id") == "g"]
    topics = [e for e in events if e["event_type"] == "TOPIC_METADATA"]
    types = {e["event_type"] for e in group}
    assert {"STATIC_MEMBER_REPLACED", "MEMBER_SESSION_EXPIRED", "MEMBER_LEFT"} <= types
    assert {"t": 12} in [e["topic_partitions"] for e in topics]

    result = replay_group(group, topics, whatif=[assignor])

    snapshots = {e["generation"]: e for e in group if e["event_type"] == "GENERATION_SNAPSHOT"}
    rows = {r["generation"]: r for r in result["group_generations"]}
    assert set(snapshots) <= set(rows)
    for number, snapshot in snapshots.items():
        row = rows[number]
        assert row["completed"] and row["has_snapshot"] and row["sources"] == ["emulator"]
        assert (row["leader_id"], row["protocol"]) == (snapshot["leader_id"], snapshot["protocol"])
        assert row["protocol"] in (assignor, None)
        assert assignment_of(row["members"]) == assignment_of(snapshot["members"])
    assert any(("t", 11) in parts for s in snapshots.values() for parts in assignment_of(s["members"]).values())

    whatif = result["whatif_results"]
    assert whatif and all(r["reproduced"] is True for r in whatif), [
        (r["episode_id"], r["generation"], r["reproduced"]) for r in whatif]
    episodes = {e["episode_id"]: e for e in result["rebalance_episodes"]}
    replayed = {n for r in whatif for n in range(episodes[r["episode_id"]]["first_gen"], r["generation"] + 1)}
    with_members = {n for n, s in snapshots.items() if s["members"]}
    assert with_members <= replayed
    if assignor == "cooperative-sticky":
        assert any(r["follow_up_generations"] == 1 for r in whatif)
        assert any(e["n_generations"] == 2 for e in episodes.values())
