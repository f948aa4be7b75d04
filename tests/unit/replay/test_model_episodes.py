"""Windowing generations into episodes, and the episode metrics: interruptions, cooperative follow-ups,
storms, an empty group, moves, loads and unavailability."""

from __future__ import annotations

import pytest

from rebalance_lab.replay.model import ReplayOptions

from .model_helpers import Group, at, by, parts, replay


def test_a_generation_interrupted_before_its_sync_merges_into_the_next_episode() -> None:
    g = Group()
    g.generation(0, 4, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)})
    g.prepare(1000, 4)
    g.join(1200, 5, "a-1", n_members=3)  # generation 5 never syncs: b leaves during the sync phase
    g.left(1250, "b-1")
    g.prepare(1250, 5, "member_leave")
    g.join(1400, 6, "a-1", n_members=2)
    g.sync(1450, 6, "a-1")
    g.snapshot(1450, 6, {"a-1": parts("t", 0, 1), "c-1": parts("t", 2, 3)})
    result = replay(g.events)
    gens = by(result["group_generations"], "generation")
    assert gens[5]["completed"] is False and gens[5]["episode_id"] == gens[6]["episode_id"] == 2
    episode = by(result["rebalance_episodes"], "episode_id")[2]
    assert (episode["first_gen"], episode["last_gen"], episode["n_generations"]) == (5, 6, 2)
    assert (episode["t_start"], episode["t_end"]) == (at(1000), at(1450))
    assert episode["trigger_code"] == "member_join"
    assert episode["join_ms"] == 400.0 and episode["sync_ms"] == 50.0 and episode["total_ms"] == 450.0
    assert episode["members_in"] == ["c-1"] and episode["members_out"] == ["b-1"]


def test_a_cooperative_follow_up_generation_belongs_to_the_same_episode() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3)}, protocol="cooperative-sticky")
    # b joins: a keeps 0, 1 and gives up 2, 3 (withheld: nobody gets them in generation 2)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1), "b-1": []}, protocol="cooperative-sticky",
                 owned={"a-1": parts("t", 0, 1, 2, 3)}, sub_gen={"a-1": 1})
    g.generation(1200, 3, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)}, protocol="cooperative-sticky",
                 reason="leader_rejoin", owned={"a-1": parts("t", 0, 1)}, sub_gen={"a-1": 2, "b-1": 2}, took_ms=50)
    result = replay(g.events)
    episodes = result["rebalance_episodes"]
    assert [(e["first_gen"], e["last_gen"]) for e in episodes] == [(1, 1), (2, 3)]
    follow = episodes[1]
    assert follow["protocol"] == "cooperative-sticky" and follow["total_ms"] == 250.0
    assert follow["partitions_moved"] == 2 and follow["partitions_revoked"] == 2
    # the two withheld partitions waited from the first sync (1100) to the follow-up's (1250)
    assert follow["unowned_partition_ms"] == pytest.approx(2 * 150.0)
    assert (follow["max_load"], follow["min_load"], follow["load_cv"]) == (2, 2, 0.0)


def test_the_client_reason_marks_a_follow_up_even_without_owned_partitions() -> None:
    g = Group(source="broker_log")
    g.prepare(0, 1, "member_join")
    g.join(50, 2, "a-1")
    g.sync(60, 2, "a-1")
    g.prepare(70, 2, "leader_rejoin", client_reason="need to revoke partitions and re-join")
    g.join(90, 3, "a-1")
    g.sync(95, 3, "a-1")
    episodes = replay(g.events)["rebalance_episodes"]
    assert [(e["first_gen"], e["last_gen"]) for e in episodes] == [(2, 3)]


def test_an_eager_episode_revokes_everything_and_counts_only_moves_between_remaining_members() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3), "c-1": parts("t", 4, 5)})
    g.left(1000, "c-1")
    g.generation(1000, 2, {"a-1": parts("t", 0, 1, 2), "b-1": parts("t", 3, 4, 5)}, reason="member_leave")
    result = replay(g.events)
    episode = result["rebalance_episodes"][1]
    # t-2 went from b to a (a move); t-4, t-5 were c's (handed over, not moved)
    assert episode["partitions_moved"] == 1 and episode["partitions_revoked"] == 6
    assert episode["members_out"] == ["c-1"] and episode["members_before"] == 3 and episode["members_after"] == 2
    # eager: all six partitions wait from the prepare to the sync (100 ms)
    assert episode["unowned_partition_ms"] == pytest.approx(600.0)
    moves = {(r["topic"], r["partition"]): r for r in result["partition_moves"] if r["generation"] == 2}
    assert set(moves) == {("t", 2), ("t", 4), ("t", 5)}
    assert moves[("t", 2)]["moved"] and not moves[("t", 4)]["moved"]
    assert moves[("t", 2)]["revoked_at"] == at(1000) and moves[("t", 2)]["assigned_at"] == at(1100)
    assert moves[("t", 2)]["gap_ms"] == 100.0


def test_a_cooperative_move_is_one_row_when_withheld_and_one_when_handed_over() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1)}, protocol="cooperative-sticky")
    g.generation(1000, 2, {"a-1": parts("t", 0), "b-1": []}, protocol="cooperative-sticky",
                 owned={"a-1": parts("t", 0, 1)}, sub_gen={"a-1": 1})
    g.generation(1200, 3, {"a-1": parts("t", 0), "b-1": parts("t", 1)}, protocol="cooperative-sticky",
                 owned={"a-1": parts("t", 0)}, sub_gen={"a-1": 2, "b-1": 2}, reason="leader_rejoin")
    rows = [r for r in replay(g.events)["partition_moves"] if r["generation"] > 1]
    assert [(r["generation"], r["owner_before"], r["owner_after"], r["moved"]) for r in rows] == [
        (2, "a-1", None, False), (3, "a-1", "b-1", True)]
    assert rows[1]["revoked_at"] == at(1100) and rows[1]["assigned_at"] == at(1300) and rows[1]["gap_ms"] == 200.0


def test_client_log_times_replace_the_episode_bounds() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1)})
    # a revoked both at 1010 (client log); b's client log shows t-1 added at 1130
    g.ev(1010, "CLIENT_PARTITIONS_REVOKED", source="client_log", member_id="a-1",
         partitions=[{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}])
    g.generation(1000, 2, {"a-1": parts("t", 0), "b-1": parts("t", 1)})
    g.ev(1130, "CLIENT_PARTITIONS_ASSIGNED", source="client_log", client_id="b",
         partitions=[{"topic": "t", "partition": 1}])
    result = replay(g.events)
    row = next(r for r in result["partition_moves"] if r["generation"] == 2)
    assert (row["revoked_at"], row["assigned_at"], row["gap_ms"]) == (at(1010), at(1130), 120.0)
    # t-0 stayed with a but was revoked at 1010 and given back at the sync (1100): 90 ms
    assert result["rebalance_episodes"][1]["unowned_partition_ms"] == pytest.approx(120.0 + 90.0)


def test_an_empty_group_is_a_completed_generation_with_no_members() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1)})
    g.left(1000, "a-1")
    g.prepare(1000, 1, "member_leave")
    g.empty(1000, 2)
    result = replay(g.events, whatif=["range"])
    gen = by(result["group_generations"], "generation")[2]
    assert gen["completed"] and gen["n_members"] == 0 and gen["t_sync_done"] == at(1000)
    episode = result["rebalance_episodes"][1]
    assert episode["members_after"] == 0 and episode["members_out"] == ["a-1"] and episode["total_ms"] == 0.0
    assert episode["max_load"] is None
    assert [r["episode_id"] for r in result["whatif_results"]] == [1]


def test_data_that_starts_mid_history_leaves_the_first_before_state_unknown() -> None:
    g = Group(source="offsets_dumplog")
    g.snapshot(0, 7, {"a-1": parts("t", 0), "b-1": parts("t", 1)})
    g.snapshot(5000, 8, {"a-1": parts("t", 0, 1)})
    episodes = replay(g.events)["rebalance_episodes"]
    assert episodes[0]["members_before"] is None and episodes[0]["partitions_moved"] is None
    assert episodes[1]["members_out"] == ["b-1"] and episodes[1]["partitions_moved"] == 0


def storm_group(starts_s: list[float], took_ms: float = 100) -> Group:
    g = Group()
    members: dict[str, list[tuple[str, int]]] = {}
    for n, start in enumerate(starts_s, 1):
        members[f"m{n}-x"] = []
        g.generation(start * 1000, n, dict(members), took_ms=took_ms)
    return g


def test_five_episodes_within_ten_minutes_are_a_storm_and_four_are_not() -> None:
    five = replay(storm_group([0, 100, 200, 300, 590]).events)
    assert [e["storm_id"] for e in five["rebalance_episodes"]] == [1, 1, 1, 1, 1]
    assert five["group_summary"][0]["storms"] == 1
    four = replay(storm_group([0, 100, 200, 300, 700]).events)
    assert [e["storm_id"] for e in four["rebalance_episodes"]] == [None] * 5


def test_a_chain_of_back_to_back_episodes_is_a_storm() -> None:
    result = replay(storm_group([0, 5, 10, 3000, 6000, 9000, 9005, 9010, 9015]).events)
    assert [e["storm_id"] for e in result["rebalance_episodes"]] == [1, 1, 1, None, None, 2, 2, 2, 2]
    assert result["group_summary"][0]["storms"] == 2


def test_storm_thresholds_are_options() -> None:
    options = ReplayOptions(storm_min_episodes=2, storm_window_s=60, storm_chain_min_episodes=10)
    result = replay(storm_group([0, 30, 1000, 5000]).events, options=options)
    assert [e["storm_id"] for e in result["rebalance_episodes"]] == [1, 1, None, None]
