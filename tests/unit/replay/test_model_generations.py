"""Folding one group's events into generations: sources merged by generation number, both prepare shapes,
causal order of same-millisecond events, and independence from input order."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables
from rebalance_lab.replay.timeline import fold, ordered

from .model_helpers import Group, at, by, parts, replay, topic_metadata


def two_member_history() -> Group:
    g = Group()
    g.joined(0, "a-1")
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3)})
    g.joined(1000, "b-1")
    g.generation(1000, 2, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)})
    return g


def test_a_broker_log_and_a_snapshot_of_the_same_generation_merge_into_one_row() -> None:
    g = Group(source="broker_log")
    g.prepare(0, 4, "member_join")
    g.join(800, 5, "a-1", protocol=None, n_members=2)
    g.sync(810, 5, "a-1")
    # the offsets dump's record of generation 5, a little later and from another source
    g.snapshot(812, 5, {"a-1": parts("t", 0), "b-1": parts("t", 1)}, protocol="range", source="offsets_dumplog")
    rows = replay(g.events)["group_generations"]
    assert len(rows) == 1
    row = rows[0]
    assert (row["generation"], row["t_prepare"], row["t_join_done"], row["t_sync_done"]) == (
        5, at(0), at(800), at(810))
    assert row["protocol"] == "range" and row["leader_id"] == "a-1" and row["n_members"] == 2
    assert row["has_log"] and row["has_snapshot"] and row["completed"]
    assert row["sources"] == ["broker_log", "offsets_dumplog"]
    assert [m["member_id"] for m in row["members"]] == ["a-1", "b-1"]


def test_without_a_leader_sync_line_the_snapshot_time_ends_the_generation() -> None:
    g = Group()
    g.prepare(0, 0)
    g.join(50, 1, "a-1")
    g.snapshot(90, 1, {"a-1": parts("t", 0)})
    assert replay(g.events)["group_generations"][0]["t_sync_done"] == at(90)


def test_a_snapshot_timestamped_with_its_state_time_ends_the_join_phase() -> None:
    g = Group(source="offsets_dumplog")
    g.snapshot(40, 3, {"a-1": parts("t", 0)}, ts_kind="current_state")
    g.snapshot(55, 3, {"a-1": parts("t", 0)})
    row = replay(g.events)["group_generations"][0]
    assert (row["t_join_done"], row["t_sync_done"], row["t_prepare"]) == (at(40), at(55), None)


def test_old_and_new_prepare_shapes_form_the_same_generation() -> None:
    new, old = Group(), Group()
    new.prepare(0, 6)
    old.prepare(0, 6, old_shape=True)
    for g in (new, old):
        g.join(10, 7, "a-1")
        g.sync(20, 7, "a-1")
    assert [r["generation"] for r in replay(new.events)["group_generations"]] == [7]
    assert [r["generation"] for r in replay(old.events)["group_generations"]] == [7]
    assert replay(old.events)["group_generations"][0]["t_prepare"] == at(0)


def test_the_groups_creation_is_not_a_generation() -> None:
    g = Group()
    g.empty(0, 0, reason_code="group_created")
    g.joined(1, "a-1")
    g.generation(1, 1, {"a-1": parts("t", 0)})
    assert [r["generation"] for r in replay(g.events)["group_generations"]] == [1]


def test_same_millisecond_events_sort_leave_before_prepare_before_join_before_sync() -> None:
    g = Group(source="broker_log")
    g.sync(5, 3, "a-1")
    g.join(5, 3, "a-1")
    g.prepare(5, 2, "member_leave")
    g.left(5, "b-1")
    kinds = [e["event_type"] for e in ordered(g.events)]
    assert kinds == ["MEMBER_LEFT", "REBALANCE_PREPARE", "JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT"]


def test_the_trigger_member_is_the_leave_logged_in_the_same_millisecond() -> None:
    g = two_member_history()
    g.prepare(5000, 2, "member_leave")  # logged first, but the leave caused it
    g.left(5000, "b-1")
    g.join(5050, 3, "a-1", n_members=1)
    g.sync(5060, 3, "a-1")
    g.snapshot(5060, 3, {"a-1": parts("t", 0, 1, 2, 3)})
    episode = replay(g.events)["rebalance_episodes"][-1]
    assert (episode["trigger_code"], episode["trigger_member"]) == ("member_leave", "b-1")
    assert episode["members_out"] == ["b-1"] and episode["members_in"] == []


def test_without_a_reason_the_trigger_comes_from_the_expiry_before_the_prepare() -> None:
    g = two_member_history()
    g.expired(5000, "b-1")
    g.prepare(5000, 2, None)
    g.join(5050, 3, "a-1")
    g.sync(5060, 3, "a-1")
    episode = replay(g.events)["rebalance_episodes"][-1]
    assert (episode["trigger_code"], episode["trigger_member"]) == ("session_timeout", "b-1")


def test_broker_logs_alone_rebuild_the_membership_from_member_events() -> None:
    g = Group(source="broker_log")
    g.joined(0, "a-1")
    g.prepare(0, 0)
    g.join(50, 1, "a-1")
    g.sync(60, 1, "a-1")
    g.joined(1000, "b-1")
    g.prepare(1000, 1)
    g.join(1050, 2, "a-1")
    g.sync(1060, 2, "a-1")
    result = replay(g.events)
    assert [[m["member_id"] for m in r["members"]] for r in result["group_generations"]] == [["a-1"], ["a-1", "b-1"]]
    episode = result["rebalance_episodes"][-1]
    assert episode["members_in"] == ["b-1"] and episode["partitions_moved"] is None


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_output_does_not_depend_on_the_input_order(rnd: random.Random) -> None:
    g = two_member_history()
    g.left(3000, "b-1")
    g.generation(3000, 3, {"a-1": parts("t", 0, 1, 2, 3)}, reason="member_leave")
    topics = [topic_metadata(-1, {"t": 4})]
    expected = replay(g.events, topics, whatif=["sticky"])
    shuffled = list(g.events)
    rnd.shuffle(shuffled)
    assert replay(shuffled, topics, whatif=["sticky"]) == expected


def test_the_arrow_round_trip_of_the_events_changes_nothing() -> None:
    g = two_member_history()
    topics = [topic_metadata(-1, {"t": 4})]
    direct = replay(g.events, topics, whatif=["range", "cooperative-sticky"])
    again = replay(ev.from_arrow(ev.to_arrow(g.events)), topics, whatif=["range", "cooperative-sticky"])
    for name in tables.TABLES:
        assert tables.to_arrow(name, again[name]).equals(tables.to_arrow(name, direct[name])), name


def test_the_fold_keys_generations_by_number_whatever_their_source_order() -> None:
    g = Group(source="offsets_dumplog")
    g.snapshot(2000, 2, {"a-1": parts("t", 0)})
    g.snapshot(1000, 1, {"a-1": parts("t", 0)})
    timeline = fold(g.events)
    assert [x.generation for x in timeline.sorted_generations()] == [1, 2]
    assert by(replay(g.events)["group_generations"], "generation")[2]["episode_id"] == 2
