"""Every fault is recorded (FAULT_INJECTED when armed, FAULT_FIRED when it changes an answer) and narrated."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from tests.faults.conftest import wait_until_async


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def member(emu: Emulator, name: str = "a", heartbeat_ms: int = 60_000) -> GroupMember:
    return GroupMember(emu.bootstrap_servers, "g", ["t"], client_id=name, session_timeout_ms=10_000,
                       rebalance_timeout_ms=10_000, heartbeat_interval_ms=heartbeat_ms, retry_backoff_ms=20)


def test_each_world_fault_is_a_fault_injected_row_in_the_recording_and_a_narrated_line(tmp_path: Path) -> None:
    record, story = tmp_path / "rec.jsonl", io.StringIO()
    with Emulator(brokers=2, record_path=str(record), explain=True, explain_to=story) as emu:
        emu.inject_error("Heartbeat", 27, group_id="g", count=2)
        emu.add_latency(5, api="Fetch")
        emu.throttle(10, broker=1, count=1)
        emu.move_coordinator("g", 1)
        emu.broker_down(1)
        emu.broker_up(1)
        emu.close_connections("nobody")
        emu.clear_faults()
    faults = [r for r in rows(record) if r["event_type"] == "FAULT_INJECTED"]
    assert [r["fault"] for r in faults] == ["error", "latency", "throttle", "move_coordinator", "broker_down",
                                            "broker_up", "close_connections", "clear"]
    assert faults[0]["group_id"] == "g" and faults[0]["detail"] == {"api": "Heartbeat", "error": 27, "count": 2}
    assert faults[1]["group_id"] is None
    assert "g: fault injected: error (api=Heartbeat, error=REBALANCE_IN_PROGRESS, count=2)" in story.getvalue()
    assert "*: fault injected: broker_down (broker=1, closed=0)" in story.getvalue()


async def test_an_error_for_one_member_fires_on_its_request_only_and_is_recorded(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    async with Emulator(topics=[("t", 2)], initial_rebalance_delay_ms=0, record_path=str(record)) as emu:
        a, b = member(emu, "a", 50), member(emu, "b", 50)
        try:
            await a.join()
            emu.inject_error("JoinGroup", "NOT_COORDINATOR", member_id="")  # the next fresh join (KIP-394 step 1)
            await b.join()  # rediscovers the coordinator and retries
            await a.wait_for_generation(2, timeout_s=10)
        finally:
            await asyncio.gather(a.close(leave=True), b.close(leave=True))
    fired = [r for r in rows(record) if r["event_type"] == "FAULT_FIRED"]
    assert len(fired) == 1
    assert fired[0]["detail"]["client_id"] == "b" and fired[0]["detail"]["error"] == 16  # type: ignore[index]


async def test_a_loading_window_refuses_joins_until_the_manual_clock_passes_its_end(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    async with Emulator(topics=[("t", 2)], manual_clock=True, initial_rebalance_delay_ms=0,
                        record_path=str(record)) as emu:
        a = member(emu)
        try:
            emu.load_in_progress(5_000)
            join = asyncio.ensure_future(a.join())
            # the member keeps retrying on COORDINATOR_LOAD_IN_PROGRESS
            await wait_until_async(lambda: emu.request_counts("JoinGroup").get(0, 0) >= 3, what="join retries")
            assert not join.done() and emu.group("g") is None
            emu.advance(5_000)
            await asyncio.wait_for(join, 5)
            assert emu.group("g").state == "Stable"  # type: ignore[union-attr]
        finally:
            await a.close(leave=True)
    faults = [r["fault"] for r in rows(record) if r["event_type"] == "FAULT_INJECTED"]
    assert faults == ["load_in_progress", "load_complete"]


def test_bad_fault_arguments_are_refused_before_anything_is_armed() -> None:
    with Emulator(brokers=1) as emu:
        with pytest.raises(ValueError, match="no broker 3"):
            emu.broker_down(3)
        with pytest.raises(ValueError, match="unknown api"):
            emu.inject_error("Hartbeat", 27)
        with pytest.raises(ValueError, match="at least 1 ms"):
            emu.load_in_progress(0)
