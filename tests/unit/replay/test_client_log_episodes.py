"""A Java client log alone gives episodes with measured join and sync times (issue 20 item 5).

The consumer logs "(Re-)joining group", "Successfully joined group with generation …" and "Successfully
synced group in generation …" at INFO; without a coordinator line or record those time the generation.
Before, every generation of a client log alone was incomplete (no times), so all of them folded into one
episode of unknown duration.
"""

from __future__ import annotations

from rebalance_lab.replay.local import run_local
from tests.unit.replay.adapter_support import SAMPLES


def test_a_client_log_alone_gives_one_complete_generation_per_join_with_its_times() -> None:
    tables = run_local([str(SAMPLES / "client-dynamic.log")]).tables
    generations = {g["generation"]: g for g in tables["group_generations"]}
    assert sorted(generations) == [1, 3]
    first = generations[1]
    # the first "(Re-)joining group", the first JoinGroup answer, the first SyncGroup answer (the sample's times)
    assert (first["t_prepare"], first["t_join_done"], first["t_sync_done"]) == (
        1740823200010000, 1740823203025000, 1740823203045000)
    assert all(g["completed"] for g in generations.values())
    episodes = sorted(tables["rebalance_episodes"], key=lambda e: e["episode_id"])
    assert [(e["join_ms"], e["sync_ms"], e["total_ms"]) for e in episodes] == [(3015.0, 20.0, 3035.0),
                                                                              (1000.0, 100.0, 1100.0)]


def test_a_static_cooperative_client_log_alone_keeps_its_generations_apart() -> None:
    tables = run_local([str(SAMPLES / "client-static-coop.log")]).tables
    assert [g["completed"] for g in sorted(tables["group_generations"], key=lambda g: g["generation"])] == [True,
                                                                                                          True]
    assert len(tables["rebalance_episodes"]) == 2
    assert all(e["total_ms"] is not None for e in tables["rebalance_episodes"])
