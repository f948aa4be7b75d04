"""The report's headline (actual against each what-if, per group and overall), its exports, and the defects of
issue 20 it fixes: one percentile method (a card said 746 ms where the group's row said 520 ms), ``--what-if
static`` labelled "range", dump-only times shown as measured, what-if colours equal to phase colours."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.local import run_local
from rebalance_lab.replay.report import PALETTE, export_tables, render, summarize, terminal_summary, write_report
from rebalance_lab.replay.report.data import ACTUAL_COLOUR
from rebalance_lab.replay.report.html import CSS

from .model_helpers import Group, parts, replay
from .test_report import T0, S, episode, svgs

Row = dict[str, Any]


def cards_of(page: str) -> dict[str, str]:
    return {label: value for value, label in
            re.findall(r'<div class="card[^"]*"><b>([^<]*)</b><span>([^<]*)</span>', page)}


def group_cells(page: str, group: str) -> list[str]:
    groups = page[page.index('id="groups"'):page.index('id="evidence"')]
    (row,) = re.findall(rf'<tr><td class="label">{group}</td>(.*?)</tr>', groups)
    return re.findall(r"<td[^>]*>([^<]*)</td>", row)


def two_episodes(group: str = "g") -> list[Row]:
    """One group, two episodes of 520 ms and 972 ms: linear interpolation gives p50 746 ms, nearest rank 520 ms."""
    return [episode(group, 1, (1, 1), 0, join=500, sync=20, total=520, trigger="member_join", members=(0, 2),
                    moved=6),
            episode(group, 2, (2, 2), 60, join=900, sync=72, total=972, trigger="member_leave", members=(2, 1),
                    moved=3)]


def test_a_groups_p50_is_the_same_on_the_card_in_its_row_and_in_the_terminal() -> None:
    tables = {"rebalance_episodes": two_episodes(),
              "group_summary": [{"cluster_id": "c1", "group_id": "g", "total_ms_p50": 520.0, "generations": 2}]}
    page = render(tables, ParseReport(), {})
    assert cards_of(page)["stop-the-world p50"] == "520 ms"
    assert group_cells(page, "g")[7] == "520 ms"  # total p50 (after kind, episodes, generations, storms, times, join)
    assert "total p50 520 ms · p95 972 ms · p99 972 ms" in terminal_summary(tables, ParseReport(), {}).splitlines()


def test_a_run_that_asked_for_linear_percentiles_gets_them_everywhere() -> None:
    tables = {"rebalance_episodes": two_episodes()}
    page = render(tables, ParseReport(), {"percentile": "linear"})
    assert cards_of(page)["stop-the-world p50"] == "746 ms"
    assert group_cells(page, "g")[7] == "746 ms"


def static_history() -> Group:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3, 4, 5)}, took_ms=100)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1, 2), "b-1": parts("t", 3, 4, 5)}, took_ms=100)
    return g


def test_the_static_what_if_is_labelled_static_not_by_the_assignor_it_ran() -> None:
    tables = replay(static_history().events, whatif=["static", "range"])
    assert {r["whatif"] for r in tables["whatif_results"]} == {"static", "range"}
    assert {r["assignor"] for r in tables["whatif_results"]} == {"range"}  # static runs the recorded assignor
    summary = summarize(tables)
    assert [s.label for s in summary.series] == ["actual", "range", "static"]
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert any(line.startswith("  static (estimated): moved") for line in lines), lines
    page = render(tables, ParseReport(), {})
    whatif = page[page.index('id="whatif"'):page.index('id="groups"')]
    assert "<td>static</td><td>range</td><td>eager+static</td>" in whatif


def headline_tables() -> dict[str, list[Row]]:
    """Two groups; eager and cooperative what-ifs with unavailability, one episode whose actual is unknown."""
    eps = [episode("pay", 1, (1, 1), 0, join=900, sync=100, total=1000, trigger="member_join", members=(2, 3),
                   moved=4),
           episode("pay", 2, (2, 2), 60, join=1900, sync=100, total=2000, trigger="member_leave", members=(3, 2),
                   moved=6),
           episode("ord", 1, (1, 1), 30, join=400, sync=100, total=500, trigger="member_join", members=(1, 2))]
    for e, unowned in zip(eps, (12_000.0, 24_000.0, None), strict=True):
        e["unowned_partition_ms"] = unowned
        e["partitions_revoked"] = 12 if unowned is not None else None
    rows = []
    for e, (eager, coop) in zip(eps, ((5, 4), (7, 5), (2, 1)), strict=True):
        base = {"cluster_id": "c1", "group_id": e["group_id"], "episode_id": e["episode_id"],
                "actual_partitions_moved": e["partitions_moved"], "actual_revocations": e["partitions_revoked"]}
        rows.append({**base, "assignor": "range", "mode": "eager", "whatif": "range", "partitions_moved": eager,
                     "revocations": 12, "est_stw_ms": e["total_ms"], "est_unowned_partition_ms": 12 * e["total_ms"]})
        rows.append({**base, "assignor": "cooperative-sticky", "mode": "cooperative", "whatif": "cooperative-sticky",
                     "partitions_moved": coop, "revocations": coop, "est_stw_ms": 0.0,
                     "est_unowned_partition_ms": coop * 300.0})
    gens = [{"cluster_id": "c1", "group_id": e["group_id"], "generation": e["first_gen"], "episode_id": e["episode_id"],
             "t_prepare": e["t_start"], "sources": ["broker_log", "offsets_dumplog"]} for e in eps]
    return {"rebalance_episodes": eps, "whatif_results": rows, "group_generations": gens}


def test_the_headline_compares_each_what_if_with_the_actual_run_overall_and_per_group(tmp_path: Path) -> None:
    tables = headline_tables()
    paths = export_tables(tmp_path, summarize(tables))
    overall = list(csv.DictReader(paths[0].open(encoding="utf-8")))
    actual, coop, eager = overall  # what-ifs in name order
    assert (actual["series"], actual["times"], actual["partitions_moved"], actual["revocations"]) == \
        ("actual", "measured", "10", "24")
    assert (actual["stw_p50_ms"], actual["stw_p95_ms"], actual["stw_max_ms"]) == ("1000.0", "2000.0", "2000.0")
    assert actual["unavailable_partition_s"] == "36.0"
    assert (eager["series"], eager["times"], eager["partitions_moved"]) == ("range", "estimated", "14")
    assert float(eager["partitions_moved_change"]) == (12 - 10) / 10  # over the two paired episodes only
    assert float(eager["unavailable_change"]) == (12 * 3000 - 36_000) / 36_000
    assert float(coop["unavailable_change"]) == (9 * 300 - 36_000) / 36_000
    assert coop["stw_max_ms"] == "0.0" and coop["paired"] == "2"
    groups = list(csv.DictReader(paths[1].open(encoding="utf-8")))
    assert [(r["scope"], r["series"]) for r in groups] == [
        ("pay", "actual"), ("pay", "cooperative-sticky"), ("pay", "range"),
        ("ord", "actual"), ("ord", "cooperative-sticky"), ("ord", "range")]
    assert groups[3]["partitions_moved"] == "" and groups[5]["partitions_moved_change"] == ""  # unknown, not 0
    document = json.loads(paths[2].read_text(encoding="utf-8"))
    assert document["overall"][0]["unavailable_partition_s"] == 36.0 and len(document["groups"]) == 6
    assert document["percentile_method"] == "nearest_rank"


def test_the_page_and_the_terminal_show_the_headline(tmp_path: Path) -> None:
    tables = headline_tables()
    page = write_report(tmp_path, tables, ParseReport(), {}).read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["headline.json", "headline_groups.csv",
                                                          "headline_overall.csv", "report.html"]
    head = page[page.index('id="headline"'):page.index('id="timelines"')]
    assert '<table class="headline overall">' in head and '<table class="sortable headline per-group">' in head
    assert ">36 partition·s<" in head and ">-92.5%<" in head  # cooperative: 2.7 vs 36 partition·s
    assert cards_of(page)["partition-unavailability"] == "36 partition·s"
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert ("  cooperative-sticky (estimated): moved 10 (-10%) · revocations 10 (-62.5%) · stop-the-world p50 "
            "0.0 ms / p95 0.0 ms / max 0.0 ms · unavailability 3 partition·s (-92.5%)") in lines  # 2.7 + 0.3 unpaired
    assert "group pay:" in lines and "group ord:" in lines


def test_times_from_an_offsets_dump_alone_are_labelled_estimated_and_the_gap_named() -> None:
    tables = headline_tables()
    for row in tables["group_generations"]:
        row["sources"] = ["offsets_dumplog"]
    page = render(tables, ParseReport(), {})
    assert "stop-the-world p50 (estimated)" in cards_of(page)
    assert "These times are estimated from the offsets dump&#x27;s record times" in page
    assert group_cells(page, "pay")[4] == "estimated"
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert "total p50 1.00 s · p95 2.00 s · p99 2.00 s (estimated from offsets-dump record times)" in lines
    assert "  actual (estimated): moved 10 · revocations 24 · stop-the-world p50 1.00 s / p95 2.00 s / max 2.00 s · " \
        "unavailability 36 partition·s" in lines
    assert any(line.startswith("  join/sync/stop-the-world times estimated") and "add the coordinator's server.log"
               in line for line in lines), lines


def test_a_broker_log_alone_says_the_what_if_needs_the_offsets_dump() -> None:
    tables = {"rebalance_episodes": two_episodes(),
              "group_generations": [{"cluster_id": "c1", "group_id": "g", "generation": 1, "sources": ["broker_log"]}]}
    page = render(tables, ParseReport(), {})
    head = page[page.index('id="headline"'):page.index('id="timelines"')]
    assert "No what-if: what-if replays unknown: add the offsets dump (kafka-dump-log.sh" in head
    evidence = page[page.index('id="evidence"'):page.index('id="diagnostics"')]
    assert "<td>what-if replays</td><td class=\"unknown level-unknown\">unknown</td>" in evidence
    assert "add the offsets dump" in evidence
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert any("what-if replays unknown" in line and line.endswith(": add the offsets dump (kafka-dump-log.sh "
                                                                "--offsets-decoder on the __consumer_offsets segments)")
               for line in lines), lines


def test_times_are_shown_in_the_runs_time_zone() -> None:
    tables = {"rebalance_episodes": two_episodes()}
    page = render(tables, ParseReport(), {"tz": "Europe/Berlin"})
    (timeline,) = svgs(page, "timeline")
    assert "time (Europe/Berlin, 2024-05-01)" in timeline
    assert "start 2024-05-01 14:00:00.000 Europe/Berlin" in timeline  # 12:00 UTC is 14:00 in Berlin (CEST)
    assert "times in Europe/Berlin" in page
    assert "start 2024-05-01 12:00:00.000 UTC" in render(tables, ParseReport(), {})


def test_what_if_colours_are_none_of_the_phase_colours() -> None:
    phases = set(re.findall(r"--(?:join|sync|whole|members|in|out):(#[0-9a-f]{6})", CSS))
    assert len(phases) == 6
    assert not phases & {*PALETTE, ACTUAL_COLOUR}
    assert len(set(PALETTE)) == len(PALETTE)


def test_a_busy_group_is_drawn_over_time_with_hover_text() -> None:
    eps = [episode("busy", i + 1, (i + 1, i + 1), i * 30, join=100, sync=10, total=110 + i,
                   trigger=("member_join", "session_timeout")[i % 2], members=(3, 3), ins=["m"], outs=["n"])
           for i in range(60)]
    page = render({"rebalance_episodes": eps}, ParseReport(), {})
    assert not svgs(page, "timeline")
    (chart,) = svgs(page, "overtime")
    titles = re.findall(r"<title>([^<]*)</title>", chart)
    assert len(titles) == 60  # one bin per 30 s here
    assert titles[0].splitlines() == [
        "busy: 2024-05-01 12:00:00.000 \u2013 12:00:29.500 UTC", "1 rebalance(s)", "triggers: member_join 1",
        "stop-the-world: longest 110 ms · summed 110 ms", "members in 1 · out 1 · members after 3\u20133"]


def test_a_local_replay_writes_the_headline_tables(tmp_path: Path) -> None:
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in static_history().events), encoding="utf-8")
    result = run_local([source], "emulator", whatif=["static"])
    write_report(tmp_path / "out", result.tables, result.report, {"tz": "UTC"})
    document = json.loads((tmp_path / "out" / "headline.json").read_text(encoding="utf-8"))
    assert [r["series"] for r in document["overall"]] == ["actual", "static"]
    assert T0 and S  # the fixture's epoch, shared with test_report


def test_one_summary_serves_the_page_the_headline_tables_and_the_terminal_and_its_lines_are_made_once(
        tmp_path: Path, monkeypatch: Any) -> None:
    """At 10,000 groups the page, the exported tables and the terminal each summarized the tables and made every
    headline line again (~9 of a 1e6-event report's CPU-s); the outputs are the same made once."""
    from rebalance_lab.replay.report import headline

    tables = headline_tables()
    fresh = tmp_path / "fresh"
    write_report(fresh, tables, ParseReport(), {})
    alone = terminal_summary(tables, ParseReport(), {})
    made: list[str] = []
    for name in ("actual_line", "whatif_line"):
        real = getattr(headline, name)
        monkeypatch.setattr(headline, name, lambda *args, _real=real, _name=name: made.append(_name) or _real(*args))
    summary = summarize(tables)
    shared = tmp_path / "shared"
    write_report(shared, tables, ParseReport(), {}, summary=summary)
    assert terminal_summary(tables, ParseReport(), {}, summary=summary) == alone
    for path in fresh.iterdir():
        assert (shared / path.name).read_bytes() == path.read_bytes(), path.name
    # overall: the actual run and two what-ifs; per group: the same for each of the two groups, once each
    assert sorted(made) == ["actual_line"] * 3 + ["whatif_line"] * 6
    assert headline.per_group(summary, summary.groups[1:]) == headline.per_group(summary)[3:]
