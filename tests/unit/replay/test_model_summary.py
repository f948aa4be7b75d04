"""The one group_summary row: counts, trigger map, percentiles, churn, static membership, coordinator moves."""

from __future__ import annotations

import pytest

from rebalance_lab.replay.model import ReplayOptions
from rebalance_lab.replay.summary import percentile

from .model_helpers import Group, at, parts, replay


def test_nearest_rank_percentiles_are_observed_values_and_linear_ones_interpolate() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert [percentile(values, p) for p in (50, 95, 99)] == [20.0, 40.0, 40.0]
    assert percentile(values, 50, "linear") == 25.0
    assert percentile(values, 95, "linear") == pytest.approx(38.5)
    assert percentile([], 50) is None and percentile([7.0], 99, "linear") == 7.0


def history() -> Group:
    g = Group()
    g.joined(0, "a-1")
    g.generation(0, 1, {"a-1": parts("t", 0, 1)}, took_ms=100)
    g.joined(60_000, "b-1")
    g.generation(60_000, 2, {"a-1": parts("t", 0), "b-1": parts("t", 1)}, took_ms=300)
    g.expired(120_000, "b-1")
    g.generation(120_000, 3, {"a-1": parts("t", 0, 1)}, reason="session_timeout", took_ms=200)
    return g


def test_the_summary_counts_episodes_triggers_and_churn() -> None:
    result = replay(history().events)
    assert len(result["group_summary"]) == 1
    row = result["group_summary"][0]
    assert (row["cluster_id"], row["group_id"], row["group_kind"]) == ("c1", "g", "classic")
    assert (row["generations"], row["episodes"], row["events"]) == (3, 3, len(history().events))
    assert row["triggers"] == {"member_join": 2, "session_timeout": 1}
    assert (row["first_ts"], row["last_ts"]) == (at(0), at(120_200))
    assert (row["total_ms_p50"], row["total_ms_p99"]) == (200.0, 300.0)
    assert (row["members_joined"], row["members_left"]) == (2, 1)
    assert row["partitions_moved"] == 1 and row["storms"] == 0 and row["coordinator_moves"] == 0


def test_linear_percentiles_are_an_option() -> None:
    row = replay(history().events, options=ReplayOptions(percentile="linear"))["group_summary"][0]
    assert row["total_ms_p50"] == 200.0 and row["total_ms_p95"] == pytest.approx(290.0)


def test_static_rejoins_count_without_and_with_a_rebalance() -> None:
    g = history()
    g.ev(130_000, "STATIC_MEMBER_REJOINED", source="broker_log", member_id="a-2", group_instance_id="i-a")
    g.ev(130_000, "STATIC_MEMBER_REJOINED", member_id="a-2", group_instance_id="i-a")  # same line, two sources
    g.generation(140_000, 4, {"a-1": parts("t", 0, 1)}, reason="static_rejoin_metadata")
    row = replay(g.events)["group_summary"][0]
    assert row["static_rejoins_without_rebalance"] == 1 and row["static_rejoin_rebalances"] == 1


def test_a_static_replacement_while_stable_counts_as_a_rejoin_without_rebalance() -> None:
    g = history()
    g.ev(130_000, "STATIC_MEMBER_REPLACED", member_id="a-2", group_instance_id="i-a", generation=3, raw="replaced a-1")
    g.ev(140_000, "STATIC_MEMBER_REPLACED", member_id="a-3", group_instance_id="i-a", generation=3, raw="replaced a-2")
    g.prepare(140_000, 3, "static_rejoin_metadata")  # this one changed its metadata: a rebalance
    assert replay(g.events)["group_summary"][0]["static_rejoins_without_rebalance"] == 1


def test_coordinator_moves_follow_the_broker_that_logs_the_group() -> None:
    g = Group(source="broker_log")
    for n, broker in enumerate([1, 1, 2, 2, 1], 1):
        g.prepare(n * 1000, n - 1, broker_id=broker)
        g.join(n * 1000 + 10, n, "a-1", broker_id=broker)
    assert replay(g.events)["group_summary"][0]["coordinator_moves"] == 2
    unloads = Group(source="broker_log")
    unloads.ev(0, "GROUP_UNLOADED", generation=3)
    unloads.ev(10, "GROUP_LOADED", generation=3)
    assert replay(unloads.events)["group_summary"][0]["coordinator_moves"] == 1


def test_a_group_without_generations_still_has_its_summary_row() -> None:
    g = Group()
    g.ev(0, "FAULT_INJECTED", fault="force_rebalance")
    result = replay(g.events)
    assert result["group_summary"][0]["episodes"] == 0 and result["rebalance_episodes"] == []
