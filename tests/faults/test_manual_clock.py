"""Time control: on a manual clock the coordinator's timers fire only when the test advances it."""

from __future__ import annotations

import asyncio

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember, Phase

SESSION_MS = 10_000


def member(emu: Emulator, name: str) -> GroupMember:
    return GroupMember(emu.bootstrap_servers, "g", ["t"], client_id=name, session_timeout_ms=SESSION_MS,
                       rebalance_timeout_ms=20_000, heartbeat_interval_ms=60_000)


async def test_a_silent_member_expires_exactly_when_the_clock_passes_its_session_timeout() -> None:
    async with Emulator(topics=[("t", 2)], manual_clock=True, initial_rebalance_delay_ms=0) as emu:
        a = member(emu, "a")
        try:
            await a.join()
            a.stop_heartbeats()
            assert a.phase is Phase.STABLE
            emu.advance(SESSION_MS - 1)
            assert emu.group("g").member_ids == (a.member_id,)  # type: ignore[union-attr]
            emu.advance(1)
            view = emu.group("g")
            assert view is not None and view.member_ids == () and view.state == "Empty"
            assert [h["generation"] for h in emu.history("g")] == [1]
        finally:
            await a.close(leave=False)


async def test_a_join_waits_for_the_initial_delay_until_the_clock_is_advanced() -> None:
    async with Emulator(topics=[("t", 2)], manual_clock=True, initial_rebalance_delay_ms=3_000) as emu:
        a = member(emu, "a")
        try:
            join = asyncio.ensure_future(a.join())
            await emu.wait_for_group_async("g", state="PreparingRebalance", members=1, timeout=5)
            emu.advance(2_999)
            assert not join.done() and emu.group("g").state == "PreparingRebalance"  # type: ignore[union-attr]
            emu.advance(1)
            await asyncio.wait_for(join, 5)
            assert a.phase is Phase.STABLE and a.generation_id == 1
        finally:
            await a.close(leave=True)


def test_advance_without_a_manual_clock_is_an_error() -> None:
    with Emulator() as emu, pytest.raises(RuntimeError, match="manual clock"):
        emu.advance(1)
