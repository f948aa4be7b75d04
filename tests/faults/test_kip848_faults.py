"""Faults and time on KIP-848 consumer groups, through the Python API: fencing a member, bumping the group
epoch, error answers to ConsumerGroupHeartbeat (68), and the manual clock firing session and rebalance timeouts.

The clients are light protocol clients (``tests/support/kip848_light.py``): one heartbeat when the test
asks, so every step is exact.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rebalance_lab.api import ConsumerGroupView, Emulator
from rebalance_lab.coordinator.classic.admin import NotFound
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.replay.local import run_local
from tests.support.kip848_light import LightConsumer, reconcile

SESSION_MS = 45_000  # group.consumer.session.timeout.ms default


@pytest.fixture
async def emu(tmp_path: Path) -> AsyncIterator[Emulator]:
    async with Emulator(topics=[("orders", 4)], manual_clock=True, seed=5,
                        record_path=str(tmp_path / "rec.jsonl")) as running:
        yield running


async def consumer(emu: Emulator, name: str, **options: object) -> LightConsumer:
    return await LightConsumer(emu.bootstrap_servers, "g", ["orders"], client_id=name, **options).open()  # type: ignore[arg-type]


def view_of(emu: Emulator) -> ConsumerGroupView:
    view = emu.group("g")
    assert isinstance(view, ConsumerGroupView)
    return view


def rows(emu: Emulator) -> list[dict[str, object]]:
    assert emu.config.record_path is not None
    return [json.loads(line) for line in Path(emu.config.record_path).read_text().splitlines()]


async def test_a_fenced_member_gets_unknown_member_id_then_rejoins_at_a_new_epoch(emu: Emulator) -> None:
    a = await consumer(emu, "a")
    await a.heartbeat()
    assert view_of(emu).group_epoch == 2
    emu.fence_member("g", a.member_id)
    view = view_of(emu)
    assert (view.group_epoch, view.members, view.state) == (3, (), "Empty")
    answer = await a.heartbeat()
    assert answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID and a.epoch == 0
    await a.heartbeat()  # a fenced client rejoins from epoch 0 with the same member id
    assert (a.epoch, a.partitions()) == (4, {0, 1, 2, 3})
    fault = next(r for r in rows(emu) if r["event_type"] == "FAULT_INJECTED")
    assert (fault["fault"], fault["detail"]) == ("fence_member", {"member_id": a.member_id})
    fenced = next(r for r in rows(emu) if r["event_type"] == "K848_MEMBER_FENCED")
    assert (fenced["member_id"], fenced["reason_code"]) == (a.member_id, "other")
    await a.close()


async def test_a_bumped_epoch_is_assigning_until_a_heartbeat_computes_the_new_target(emu: Emulator) -> None:
    a = await consumer(emu, "a")
    await a.heartbeat()
    assert emu.bump_epoch("g") == 3
    view = view_of(emu)
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Assigning", 3, 2)
    emu.advance(2_000)  # past the 4.4 assignment interval
    await a.heartbeat()
    view = view_of(emu)
    assert (view.state, view.assignment_epoch, a.epoch, a.partitions()) == ("Stable", 3, 3, {0, 1, 2, 3})
    bump = [r for r in rows(emu) if r["event_type"] == "K848_EPOCH_BUMP"][-1]
    assert (bump["generation"], bump["reason_code"]) == (3, "operator")
    await a.close()


async def test_force_rebalance_and_expire_member_on_a_consumer_group_bump_and_fence(emu: Emulator) -> None:
    a = await consumer(emu, "a")
    await a.heartbeat()
    emu.force_rebalance("g")
    assert view_of(emu).state == "Assigning"
    emu.expire_member("g", a.member_id)
    assert view_of(emu).members == ()
    with pytest.raises(NotFound, match="no member"):
        emu.fence_member("g", "nobody")
    with pytest.raises(NotFound, match="no consumer group"):
        emu.bump_epoch("classic-or-missing")
    await a.close()


async def test_errors_for_the_next_n_consumer_group_heartbeats_leave_the_group_untouched(emu: Emulator) -> None:
    a = await consumer(emu, "a")
    emu.inject_error("ConsumerGroupHeartbeat", "COORDINATOR_NOT_AVAILABLE", count=2, group_id="g")
    for _ in range(2):
        answer = await a.heartbeat()
        # ConsumerGroupHeartbeatRequest.getErrorResponse (4.4.0): the code only; no message, member id or interval
        assert (answer.error_code, answer.error_message, answer.member_id, answer.member_epoch,
                answer.heartbeat_interval_ms, answer.assignment) == (
            ErrorCode.COORDINATOR_NOT_AVAILABLE, None, None, 0, 0, None)
        assert emu.group("g") is None  # the join never reached the coordinator
    await a.heartbeat()
    assert (a.epoch, a.partitions()) == (2, {0, 1, 2, 3})
    emu.inject_error(68, "FENCED_MEMBER_EPOCH", member_id=a.member_id)  # by key, for one member
    answer = await a.heartbeat()
    assert answer.error_code == ErrorCode.FENCED_MEMBER_EPOCH and view_of(emu).member(a.member_id) is not None
    fired = [r for r in rows(emu) if r["event_type"] == "FAULT_FIRED"]
    assert all("group_kind" not in r for r in fired)  # a fault row names no kind: the group's own rows do
    assert [(r["detail"]["api"], r["detail"]["error"]) for r in fired] == [  # type: ignore[index]
        ("ConsumerGroupHeartbeat", 15), ("ConsumerGroupHeartbeat", 15), ("ConsumerGroupHeartbeat", 110)]
    await a.close()
    assert emu.config.record_path is not None
    (summary,) = run_local([emu.config.record_path]).tables["group_summary"]
    assert summary["group_kind"] == "consumer"  # the replay reads it as a consumer group, faults and all


async def test_the_manual_clock_expires_a_silent_member_exactly_at_its_session_timeout(emu: Emulator) -> None:
    a, b = await consumer(emu, "a"), await consumer(emu, "b")
    await a.heartbeat()
    emu.advance(2_000)
    await b.heartbeat()
    await reconcile([a, b])
    emu.advance(SESSION_MS - 1)  # B heartbeat last at t=2 s; A keeps its session alive first
    await a.heartbeat()
    assert {m.member_id for m in view_of(emu).members} == {a.member_id, b.member_id}
    emu.advance(1)
    assert [m.member_id for m in view_of(emu).members] == [a.member_id]
    fenced = next(r for r in rows(emu) if r["event_type"] == "K848_MEMBER_FENCED")
    assert (fenced["member_id"], fenced["reason_code"]) == (b.member_id, "session_timeout")
    await a.heartbeat()
    assert a.partitions() == {0, 1, 2, 3}
    for m in (a, b):
        await m.close()


async def test_the_manual_clock_fences_a_member_that_does_not_revoke_within_its_rebalance_timeout() -> None:
    out = io.StringIO()
    async with Emulator(topics=[("orders", 4)], manual_clock=True, explain=True, explain_to=out) as emu:
        a = await consumer(emu, "a", rebalance_timeout_ms=10_000)
        b = await consumer(emu, "b")
        await a.heartbeat()
        emu.advance(2_000)
        await b.heartbeat()
        answer = await a.heartbeat()  # told to revoke two partitions; it never acknowledges
        assert view_of(emu).member(a.member_id).state == "UNREVOKED_PARTITIONS"  # type: ignore[union-attr]
        assert len(a.partitions()) == 2 and answer.member_epoch == 2
        emu.advance(9_999)
        assert view_of(emu).member(a.member_id) is not None
        emu.advance(1)
        assert view_of(emu).member(a.member_id) is None
        await b.heartbeat()
        assert b.partitions() == {0, 1, 2, 3}
        for m in (a, b):
            await m.close()
    told = " ".join(out.getvalue().split())  # wrapped lines joined
    assert "because it failed to transition from epoch 2 within 10000ms (rebalance_timeout)" in told


async def test_wait_for_group_waits_for_a_consumer_groups_state_and_epoch(emu: Emulator) -> None:
    a, b = await consumer(emu, "a"), await consumer(emu, "b")
    await a.heartbeat()
    emu.advance(2_000)
    await b.heartbeat()
    with pytest.raises(TimeoutError, match="state=Reconciling epoch=3 members=2"):
        await emu.wait_for_group_async("g", state="Stable", generation_at_least=3, timeout=0.05)
    await reconcile([a, b])
    view = await emu.wait_for_group_async("g", state="Stable", generation_at_least=3, members=2, timeout=5)
    assert isinstance(view, ConsumerGroupView) and view.group_type == "consumer"
    assert {m.member_id: m.member_epoch for m in view.members} == {a.member_id: 3, b.member_id: 3}
    described = emu.describe("g")
    assert described is not None and described["type"] == "consumer"
    assert sorted(tp["partition"] for m in described["members"] for tp in m["assigned"]) == [0, 1, 2, 3]
    for m in (a, b):
        await m.close()
