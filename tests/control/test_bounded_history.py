"""The toolkit's generation history is bounded (issue 17, defect 6): the newest N generations per group and M in all
are kept, classic and KIP-848 alike, and the cap and what was dropped are visible to the Python API and over HTTP."""

from __future__ import annotations

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.control.bounded_history import BoundedHistory
from rebalance_lab.control.views import GenerationHistory
from rebalance_lab.coordinator.classic.records import GenerationStarted
from rebalance_lab.coordinator.consumer import records as c
from tests.control.raw_http import call


def started(group_id: str, generation: int) -> GenerationStarted:
    return GenerationStarted(group_id=group_id, ts_ms=generation, generation=generation, protocol_type="consumer",
                             candidates=("range",), votes=(("m", "range"),), protocol="range", leader_id="m",
                             members=(("m", None),), not_rejoined=())


def bumped(group_id: str, epoch: int) -> c.GroupEpochBumped:
    return c.GroupEpochBumped(group_id=group_id, ts_ms=epoch, epoch=epoch, metadata_hash=(), reason="member_join")


def test_the_store_keeps_the_newest_entries_of_each_group_and_counts_the_dropped_ones() -> None:
    store = BoundedHistory(per_group=3, total=100)
    for n in range(1, 8):
        store.append("g", {"n": n})
    store.append("h", {"n": 1})
    assert [e["n"] for e in store.entries("g")] == [5, 6, 7] and store.dropped("g") == 4
    assert store.summary() == {"limit_per_group": 3, "limit_total": 100, "retained": 4, "groups": 2,
                               "dropped_total": 4, "dropped_by_group": {"g": 4}, "dropped_of_forgotten_groups": 0}


def test_the_total_cap_drops_the_oldest_entry_of_any_group_and_forgets_groups_left_with_none() -> None:
    store = BoundedHistory(per_group=10, total=4)
    for group in ("a", "b", "c", "d", "e", "f"):
        store.append(group, {"group": group})
    assert [g for g in "abcdef" if store.entries(g)] == ["c", "d", "e", "f"]
    summary = store.summary()
    assert (summary["retained"], summary["groups"], summary["dropped_total"]) == (4, 4, 2)
    assert summary["dropped_of_forgotten_groups"] == 2 and summary["dropped_by_group"] == {}


def test_entries_a_group_dropped_by_its_own_cap_do_not_count_against_the_total() -> None:
    store = BoundedHistory(per_group=3, total=10)
    for n in range(5):
        store.append("quiet", {"n": n})
    for n in range(1_000):
        store.append("busy", {"n": n})
    assert [e["n"] for e in store.entries("quiet")] == [2, 3, 4] and len(store.entries("busy")) == 3
    assert store.summary()["retained"] == 6


def test_a_stream_of_new_group_ids_keeps_the_store_within_its_total_cap() -> None:
    store = BoundedHistory(per_group=2, total=50)
    for n in range(20_000):
        store.append(f"group-{n % 997}", {"n": n})
    summary = store.summary()
    assert summary["retained"] <= 50 and summary["groups"] <= 50
    assert summary["retained"] + summary["dropped_total"] == 20_000


def test_negative_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        BoundedHistory(per_group=-1)


def test_the_generation_history_keeps_the_last_thousand_generations_of_a_group_by_default() -> None:
    history = GenerationHistory()
    for generation in range(1, 2_501):
        history.on_record(started("g", generation))
    kept = history.of("g")
    assert [e["generation"] for e in kept] == list(range(1_501, 2_501))
    assert (kept.limit, kept.dropped) == (1_000, 1_500)


def test_consumer_group_epochs_share_the_caps_with_classic_generations() -> None:
    history = GenerationHistory(per_group=5, total=8)
    for epoch in range(1, 11):
        history.on_record(bumped("k", epoch))
    for generation in range(1, 5):
        history.on_record(started("g", generation))
    assert [e["epoch"] for e in history.of("k")] == [7, 8, 9, 10]  # 5 by its own cap, then 1 more by the total
    assert [e["generation"] for e in history.of("g")] == [1, 2, 3, 4]
    assert history.of("k").dropped == 6 and history.store.summary()["retained"] == 8


def test_a_history_limit_of_zero_keeps_nothing() -> None:
    history = GenerationHistory(per_group=0)
    history.on_record(started("g", 1))
    assert history.of("g") == [] and history.store.summary()["retained"] == 0


async def test_the_python_api_and_the_control_endpoint_show_the_cap_and_the_dropped_count() -> None:
    async with Emulator(topics=[("t", 2)], initial_rebalance_delay_ms=0, control_port=0, history_limit=2) as emu:
        member = GroupMember(emu.bootstrap_servers, "g", ["t"], client_id="m", session_timeout_ms=10_000,
                             rebalance_timeout_ms=10_000, heartbeat_interval_ms=50)
        try:
            await member.join()
            for generation in (2, 3, 4):
                emu.force_rebalance("g")
                await member.wait_for_generation(generation, timeout_s=10)
            kept = emu.history("g")
            assert [e["generation"] for e in kept] == [3, 4] and (kept.limit, kept.dropped) == (2, 2)
            assert emu.control_url is not None
            answer = await call(emu.control_url, "GET", "/groups/g/history")
            assert [e["generation"] for e in answer.body] == [3, 4]
            assert (answer.headers["x-history-limit"], answer.headers["x-history-dropped"]) == ("2", "2")
            summary = (await call(emu.control_url, "GET", "/history")).body
            assert summary == emu.history_summary()
            assert (summary["limit_per_group"], summary["limit_total"], summary["dropped_total"]) == (2, 10_000, 2)
        finally:
            await member.close(leave=True)
