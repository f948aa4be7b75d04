"""A KIP-848 consumer group as a real Kafka 4.4.0 broker recorded it, replayed.

The samples were written by ``python -m tests.support.kip848_capture`` (its docstring has the
history: m1, m2 and the static m3 join; m2 leaves; m3 restarts under a new member id; m4 joins and
is killed; ``orders`` grows from 6 to 8 partitions; m1 leaves, m3 leaves temporarily): the broker's
``server.log`` with the coordinator at DEBUG, and ``kafka-dump-log --offsets-decoder`` of its
``__consumer_offsets`` partition. ``tests/broker/test_kip848_replay.py`` runs the same history
against a live broker; these tests pin what this recording gives, exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.model import replay_group
from rebalance_lab.replay.sources import SourceContext, parse_file

SAMPLES = Path(__file__).parent / "samples"
LOG = SAMPLES / "kafka-4.4-consumer-group.log"
DUMP = SAMPLES / "kafka-4.4-consumer-group.dump.txt"
GROUP = "orders-848"

M1, M2, M3 = "KGJub1aAQCmAT6T3ECG10g", "mu4W71q8Th66VYfGhIBv/g", "iGlEAUrrTUe0dXxBg4OSRA"
M3B, M4 = "LOOC08KsRDG/gzml6V2TaA", "Jirq/0+YQY2kY592oLpkOQ"  # m3 after its restart; the member then killed


def parse(path: Path) -> tuple[list[dict[str, Any]], ParseReport]:
    report = ParseReport()
    events = list(parse_file(str(path), "auto", SourceContext(name=path.name, report=report)))
    return events, report


def replay(*paths: Path, whatif: tuple[str, ...] = ()) -> dict[str, Any]:
    events = [e for path in paths for e in parse(path)[0] if e.get("group_id") == GROUP]
    return dict(replay_group(events, [], whatif=whatif))


def assignments(row: dict[str, Any]) -> dict[str, list[int]]:
    return {m["member_id"]: [p["partition"] for p in m.get("assignment") or ()] for m in row["members"]}


def test_every_coordinator_line_of_kafka_4_4_parses() -> None:
    events, report = parse(LOG)
    assert report.unparsed == 0
    kinds = [e["event_type"] for e in events if e.get("group_id") == GROUP]
    # 4.1+ forms: "Bumped group epoch to E with metadata hash H.", partitions "<topic id>-<p>@<epoch>",
    # "Static member X with instance id I temporarily left the consumer group."
    assert (kinds.count("K848_EPOCH_BUMP"), kinds.count("K848_MEMBER_STATE"), kinds.count("K848_MEMBER_LEFT")) == (
        8, 24, 4)
    state = next(e for e in events if e["event_type"] == "K848_MEMBER_STATE" and e["raw"] == "UNREVOKED_PARTITIONS")
    assert state["partitions"][0]["partition"] == 0 and "@" not in state["partitions"][0]["topic"]
    temporary = [e for e in events if e.get("reason_code") == "static_temporary_leave"]
    assert [e["member_id"] for e in temporary] == [M3, M3B]


def test_each_epoch_is_one_rebalance_with_the_members_and_assignments_the_broker_reconciled() -> None:
    gens = replay(LOG)["group_generations"]
    assert [(g["generation"], g["completed"], g["protocol"], g["trigger_codes"]) for g in gens] == [
        (2, True, "uniform", ["member_join"]), (3, True, "uniform", ["member_join"]),
        (4, True, "uniform", ["member_join"]), (5, True, "uniform", ["member_leave"]),
        (6, True, "uniform", ["member_join"]), (7, True, "uniform", ["session_timeout"]),
        (8, True, "uniform", ["metadata_change"]), (9, None, None, ["member_leave"])]
    assert [assignments(g) for g in gens[:-1]] == [
        {M1: [0, 1, 2, 3, 4, 5]},
        {M1: [0, 1, 2], M2: [3, 4, 5]},
        {M1: [0, 1], M2: [3, 4], M3: [2, 5]},
        {M1: [0, 1, 3], M3: [2, 4, 5]},
        {M4: [3, 5], M1: [0, 1], M3B: [2, 4]},
        {M1: [0, 1, 3], M3B: [2, 4, 5]},
        {M1: [0, 1, 3, 6], M3B: [2, 4, 5, 7]},
    ]
    # topic ids (in every state) became the name the members subscribed to
    assert {p["topic"] for g in gens for m in g["members"] for p in m.get("assignment") or ()} == {"orders"}


def test_episodes_carry_the_cause_the_members_in_and_out_and_the_reconciliation_time() -> None:
    episodes = replay(LOG)["rebalance_episodes"]
    assert [(e["first_gen"], e["trigger_code"], e["trigger_member"], e["members_in"], e["members_out"])
            for e in episodes] == [
        (2, "member_join", M1, [M1], []), (3, "member_join", M2, [M2], []), (4, "member_join", M3, [M3], []),
        (5, "member_leave", M2, [], [M2]), (6, "member_join", M4, [M4], []), (7, "session_timeout", M4, [], [M4]),
        (8, "metadata_change", None, [], []), (9, "member_leave", M1, [], [M1])]
    # from the bump to the target assignment (join), then until the last member was STABLE at the epoch (sync)
    assert [(e["join_ms"], e["sync_ms"], e["total_ms"]) for e in episodes] == [
        (7.0, 3.0, 10.0), (0.0, 1000.0, 1000.0), (0.0, 1001.0, 1001.0), (66.0, 56.0, 122.0),
        (0.0, 1001.0, 1001.0), (825.0, 139.0, 964.0), (0.0, 143.0, 143.0), (None, None, None)]
    assert [(e["partitions_moved"], e["partitions_revoked"], e["partitions_total"]) for e in episodes] == [
        (0, 0, 6), (3, 3, 6), (2, 2, 6), (0, 0, 6), (2, 2, 6), (0, 0, 6), (0, 0, 8), (None, None, 8)]


def test_a_partition_waits_from_its_owners_revocation_to_the_next_owners_state_that_lists_it() -> None:
    moves = replay(LOG)["partition_moves"]
    base = 1_795_654_290_000_000
    rows = [(r["generation"], r["partition"], r["owner_before"], r["owner_after"], r["moved"],
             None if r["revoked_at"] is None else r["revoked_at"] - base, r["assigned_at"] - base, r["gap_ms"])
            for r in moves]
    assert rows == [
        (3, 3, M1, M2, True, 213_292_000, 214_235_000, 943.0),
        (3, 4, M1, M2, True, 213_292_000, 214_235_000, 943.0),
        (3, 5, M1, M2, True, 213_292_000, 214_235_000, 943.0),
        (4, 2, M1, M3, True, 217_300_000, 218_235_000, 935.0),
        (4, 5, M2, M3, True, 217_246_000, 218_235_000, 989.0),
        # m2 left: its partitions are handed over (not "moved"), unowned from its leave
        (5, 3, M2, M1, False, 221_181_000, 221_303_000, 122.0),
        (5, 4, M2, M3, False, 221_181_000, 221_247_000, 66.0),
        (6, 3, M1, M4, True, 230_315_000, 230_478_000, 163.0),
        # m3's partition 5, revoked by its successor under the same instance id (m3 restarted, no rebalance)
        (6, 5, M3, M4, True, 230_455_000, 230_478_000, 23.0),
        (7, 3, M4, M1, False, 239_499_000, 240_324_000, 825.0),
        (7, 5, M4, M3B, False, 239_499_000, 240_463_000, 964.0),
        (8, 6, None, M1, False, None, 244_333_000, None),
        (8, 7, None, M3B, False, None, 244_475_000, None),
    ]


def test_the_offsets_dump_tells_the_same_history_as_the_log() -> None:
    from_log, from_dump = replay(LOG), replay(DUMP)
    assert [(g["generation"], assignments(g), g["protocol"]) for g in from_dump["group_generations"]] == [
        (g["generation"], assignments(g), "uniform") for g in from_log["group_generations"]]
    # the log names no member's client; the dump's member records do
    assert {m["client_id"] for g in from_dump["group_generations"] for m in g["members"]} == {"rdkafka"}
    assert {m["client_id"] for g in from_log["group_generations"] for m in g["members"]} == {None}
    # the dump cannot tell a fence from a leave; its record times are the batch's, within a few ms of the lines
    assert [e["trigger_code"] for e in from_dump["rebalance_episodes"]] == [
        "member_join", "member_join", "member_join", "member_leave", "member_join", "member_leave",
        "metadata_change", "member_leave"]
    for dumped, logged in zip(from_dump["rebalance_episodes"][:-1], from_log["rebalance_episodes"][:-1],
                              strict=True):
        assert abs(dumped["t_start"] - logged["t_start"]) <= 11_000
        assert abs(dumped["t_end"] - logged["t_end"]) <= 2_000
    def moved(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["generation"], r["partition"], r["owner_before"], r["owner_after"]) for r in rows]

    assert moved(from_dump["partition_moves"]) == moved(from_log["partition_moves"])
    summary = ("members_joined", "members_left", "static_rejoins_without_rebalance", "partitions_moved", "episodes")
    assert [from_dump["group_summary"][0][k] for k in summary] == [from_log["group_summary"][0][k] for k in summary] \
        == [4, 3, 1, 7, 8]


def test_the_log_and_the_dump_together_fold_into_the_logs_generations() -> None:
    both, alone = replay(LOG, DUMP), replay(LOG)
    keep = ("generation", "t_prepare", "t_join_done", "t_sync_done", "completed", "trigger_codes")
    assert [({k: g[k] for k in keep}, assignments(g)) for g in both["group_generations"][:-1]] == [
        ({k: g[k] for k in keep}, assignments(g)) for g in alone["group_generations"][:-1]]
    assert {m["client_id"] for g in both["group_generations"] for m in g["members"]} == {"rdkafka"}
    assert all(g["has_log"] and g["has_snapshot"] for g in both["group_generations"])
    # the dump records the last member's temporary leave: epoch 9 is known not to have reconciled
    assert both["group_generations"][-1]["completed"] is False
    assert both["group_summary"][0]["members_joined"] == 4


@pytest.mark.parametrize("source", [LOG, DUMP], ids=["log", "dump"])
def test_what_ifs_run_our_assignors_over_each_epoch_but_never_the_server_assignor(source: Path) -> None:
    rows = replay(source, whatif=("range", "cooperative-sticky", "static"))["whatif_results"]
    assert {(r["assignor"], r["mode"]) for r in rows} == {("range", "eager"), ("cooperative-sticky", "cooperative")}
    coop = {r["episode_id"]: r for r in rows if r["assignor"] == "cooperative-sticky"}
    assert coop[2]["actual_partitions_moved"] == 3 and coop[2]["partitions_moved"] == 3
    assert all(sum(len(a["partitions"]) for a in r["assignment"]) in (6, 8) for r in coop.values() if r["assignment"])
