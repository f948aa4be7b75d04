"""The replay report: the HTML page's structure, charts and escaping, and the terminal summary's numbers.

The tables are written by hand: three groups (``payments`` with a storm and recorded assignments,
``orders`` from logs only so its moves are unknown, ``idle`` with no episode), plus a synthetic
10,000-group case for the page's size.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.report import (
    MAX_LANES,
    MAX_TABLE_GROUPS,
    densest_window,
    fmt_ms,
    fmt_pct,
    percentile,
    render,
    terminal_summary,
    write_report,
)
from rebalance_lab.replay.svg import log_bins, nice_axis, time_ticks

Row = dict[str, Any]

T0 = 1_714_564_800_000_000  # 2024-05-01T12:00:00Z in epoch microseconds
S = 1_000_000
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}


# --- fixture --------------------------------------------------------------------------------------------------------

def episode(group: str, episode_id: int, gens: tuple[int, int], at_s: float, *, join: float | None,
            sync: float | None, total: float | None, trigger: str | None, members: tuple[int, int],
            ins: list[str] | None = None, outs: list[str] | None = None, moved: int | None = None,
            storm: int | None = None) -> Row:
    start = T0 + int(at_s * S)
    return {
        "cluster_id": "c1", "group_id": group, "episode_id": episode_id, "first_gen": gens[0], "last_gen": gens[1],
        "n_generations": gens[1] - gens[0] + 1, "t_start": start,
        "t_end": None if total is None else start + int(total * 1000), "join_ms": join, "sync_ms": sync,
        "total_ms": total, "trigger_code": trigger, "trigger_member": None, "members_before": members[0],
        "members_after": members[1], "members_in": ins or [], "members_out": outs or [], "protocol": "range",
        "partitions_total": 12 if moved is not None else None, "partitions_moved": moved,
        "partitions_revoked": moved, "unowned_partition_ms": None, "max_load": None, "min_load": None,
        "load_cv": None, "storm_id": storm,
    }


def payments() -> list[Row]:
    e = episode
    return [
        e("payments", 1, (1, 1), 0, join=3000, sync=20, total=3020, trigger="member_join", members=(0, 3),
          ins=["c1", "c2", "c3"], moved=0),
        e("payments", 2, (2, 2), 600, join=1200, sync=30, total=1230, trigger="session_timeout", members=(3, 2),
          outs=["c3"], moved=4, storm=1),
        e("payments", 3, (3, 3), 630, join=800, sync=25, total=825, trigger="member_join", members=(2, 3),
          ins=["c4"], moved=4, storm=1),
        e("payments", 4, (4, 4), 660, join=45000, sync=40, total=45040, trigger="session_timeout", members=(3, 2),
          outs=["c4"], moved=4, storm=1),
        e("payments", 5, (5, 6), 720, join=900, sync=60, total=2100, trigger="member_join", members=(2, 3),
          ins=["c5"], moved=3, storm=1),
        e("payments", 6, (7, 7), 760, join=500, sync=15, total=515, trigger="member_leave", members=(3, 2),
          outs=["c1"], moved=6, storm=1),
    ]


def orders(group: str = "orders") -> list[Row]:
    return [
        episode(group, 1, (1, 1), 100, join=3100, sync=12, total=3112, trigger="member_join", members=(0, 2),
                ins=["o1", "o2"]),
        episode(group, 2, (2, 2), 3600, join=None, sync=None, total=5000, trigger=None, members=(2, 1),
                outs=["o2"]),
    ]


def generations(episodes: list[Row]) -> list[Row]:
    rows = []
    for ep in episodes:
        for offset, gen in enumerate(range(ep["first_gen"], ep["last_gen"] + 1)):
            rows.append({"cluster_id": "c1", "group_id": ep["group_id"], "generation": gen,
                         "episode_id": ep["episode_id"], "t_prepare": ep["t_start"] + offset * 1_000_000,
                         "completed": True})
    return rows


def whatif(ep: Row, assignor: str, mode: str, moved: int, imbalance: int, reproduced: bool | None) -> Row:
    actual_known = ep["partitions_moved"] is not None
    return {
        "cluster_id": "c1", "group_id": ep["group_id"], "episode_id": ep["episode_id"],
        "generation": ep["last_gen"], "assignor": assignor, "mode": mode, "partitions_moved": moved,
        "revocations": moved if mode == "cooperative" else 12, "follow_up_generations": 1 if moved else 0,
        "imbalance": imbalance, "est_stw_ms": 1000.0, "actual_partitions_moved": ep["partitions_moved"],
        "actual_revocations": ep["partitions_revoked"], "actual_imbalance": 0 if actual_known else None,
        "reproduced": reproduced if actual_known else None,
    }


def whatifs(pay: list[Row], orde: list[Row]) -> list[Row]:
    rows = []
    for i, (ep, moved) in enumerate(zip(pay, [0, 6, 6, 6, 5, 8], strict=True)):
        rows.append(whatif(ep, "range", "eager", moved, i % 2, reproduced=i == 0))
        rows.append(whatif(ep, "cooperative-sticky", "cooperative", ep["partitions_moved"], 0, reproduced=True))
    for ep, moved in zip(orde, [2, 3], strict=True):
        rows.append(whatif(ep, "range", "eager", moved, 0, reproduced=None))
        rows.append(whatif(ep, "cooperative-sticky", "cooperative", moved - 2, 0, reproduced=None))
    return rows


def summary_row(group: str, episodes: int, generations: int, storms: int) -> Row:
    return {"cluster_id": "c1", "group_id": group, "group_kind": "classic", "first_ts": T0, "last_ts": T0 + 3600 * S,
            "events": 10, "generations": generations, "episodes": episodes, "storms": storms,
            "members_joined": 2, "members_left": 1, "partitions_moved": None}


def fixture_tables(orders_group: str = "orders") -> dict[str, list[Row]]:
    pay, orde = payments(), orders(orders_group)
    return {
        "group_generations": generations(pay + orde),
        "rebalance_episodes": pay + orde,
        "partition_moves": [],
        "whatif_results": whatifs(pay, orde),
        "group_summary": [summary_row("payments", 6, 7, 1), summary_row(orders_group, 2, 2, 0),
                          summary_row("idle", 0, 0, 0)],
    }


def parse_report() -> ParseReport:
    report = ParseReport(files=2)
    report.line(1200)
    report.event("broker_log", 300)
    report.event("offsets_dumplog", 40)
    report.ignore(857)
    report.unparsable("server.log:17", "bad_timestamp", "[2024-05-01 12:00:0x,123] INFO <garbage> & more")
    report.unparsable("server.log:90", "truncated", "[2024-05-01 12:00:09,123] INFO [GroupCoordinator 1]: Prep")
    report.unparsable("server.log:99", "truncated", "partial")
    return report


META: dict[str, Any] = {
    "inputs": ["/logs/server.log", "/dumps/offsets.txt"], "formats": {"/logs/server.log": "broker_log",
                                                                      "/dumps/offsets.txt": "offsets_dumplog"},
    "master": "local[2]", "whatif_assignors": ["range", "cooperative-sticky"],
    "timings": {"parse": 1.25, "replay": 3.5}, "counts": {"events": 340}, "report": "/tmp/out/report.html",
    "spark_version": "4.3.0", "tz": "UTC", "errors": [], "busy_groups": [["c1", "payments"]],
}


# --- HTML helpers ---------------------------------------------------------------------------------------------------

class StrictChecker(HTMLParser):
    """Fails on any end tag that does not close the innermost open element, and on elements left open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()


class Elements(HTMLParser):
    """Every start tag with its attributes, in document order, and the text of each <title>/<pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def check_well_formed(page: str) -> None:
    checker = StrictChecker()
    checker.feed(page)
    checker.close()
    assert checker.errors == []
    assert checker.stack == []


def elements(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def svgs(page: str, cls: str) -> list[str]:
    """The markup of each <svg> whose class list holds ``cls`` (SVGs do not nest here)."""
    return [m.group(0) for m in re.finditer(r"<svg[^>]*class=\"[^\"]*\b" + cls + r"\b[^\"]*\"[^>]*>.*?</svg>",
                                            page, re.S)]


def attr_values(markup: str, tag: str, cls: str, name: str) -> list[str]:
    return [a[name] or "" for t, a in elements(markup).tags if t == tag and cls in (a.get("class") or "").split()]


@pytest.fixture
def page(tmp_path: Path) -> str:
    path = write_report(tmp_path / "out", fixture_tables(), parse_report(), META)
    assert path == tmp_path / "out" / "report.html"
    return path.read_text(encoding="utf-8")


# --- the page -------------------------------------------------------------------------------------------------------

def test_page_is_well_formed_html(page: str) -> None:
    check_well_formed(page)
    assert page.startswith("<!DOCTYPE html>")


def test_one_timeline_per_busy_group_with_one_bar_per_episode(page: str) -> None:
    timelines = svgs(page, "timeline")
    groups = [elements(t).tags[0][1]["data-group"] for t in timelines]
    assert groups == ["payments", "orders"]  # idle has no episode; the busiest first
    assert [len(attr_values(t, "g", "ep", "data-episode")) for t in timelines] == [6, 2]
    assert attr_values(timelines[0], "g", "ep", "data-episode") == ["1", "2", "3", "4", "5", "6"]
    assert len(attr_values(timelines[0], "g", "storm", "data-episode")) == 5


def test_timeline_splits_join_and_sync_and_marks_members(page: str) -> None:
    pay, orde = svgs(page, "timeline")
    assert len(attr_values(pay, "rect", "join", "x")) == 6
    assert len(attr_values(pay, "rect", "sync", "x")) == 6
    assert len(attr_values(orde, "rect", "whole", "x")) == 1  # episode 2: join/sync split unknown
    assert attr_values(pay, "path", "in", "data-n") == ["3", "1", "1"]
    assert attr_values(pay, "path", "out", "data-n") == ["1", "1", "1"]
    assert len(attr_values(pay, "line", "genmark", "x1")) == 1  # episode 5 spans generations 5 and 6
    assert len(attr_values(pay, "path", "step", "d")) == 1
    assert "time (UTC, 2024-05-01)" in pay


def test_episode_tooltip_has_the_details(page: str) -> None:
    pay = svgs(page, "timeline")[0]
    texts = elements(pay).texts
    tooltip = next(t for t in texts if t.startswith("payments · episode 4"))
    assert "join 45.0 s · sync 40 ms · total 45.0 s" in tooltip
    assert "trigger session_timeout" in tooltip
    assert "members 3 → 2" in tooltip
    assert "partitions moved 4 of 12" in tooltip
    assert "out: c4" in tooltip
    assert "part of storm 1" in tooltip


def test_moved_chart_has_one_bar_per_episode_per_series(page: str) -> None:
    pay, orde = svgs(page, "moved")
    assert len(attr_values(pay, "rect", "bar", "data-series")) == 6 * 3
    assert len(attr_values(orde, "rect", "bar", "data-series")) == 2 * 3
    pay_values = list(zip(attr_values(pay, "rect", "bar", "data-series"),
                          attr_values(pay, "rect", "bar", "data-value"), strict=True))
    assert [v for s, v in pay_values if s == "range"] == ["0", "6", "6", "6", "5", "8"]
    assert [v for s, v in pay_values if s == "actual"] == ["0", "4", "4", "4", "3", "6"]
    orde_values = dict(zip(attr_values(orde, "rect", "bar", "data-value"),
                           attr_values(orde, "rect", "bar", "data-series"), strict=False))
    assert attr_values(orde, "rect", "q", "data-series") == ["actual", "actual"]  # logs only: unknown, not 0
    assert orde_values["3"] == "range"
    assert "actual" in page and "cooperative-sticky" in page


def test_histogram_counts_every_episode_once(page: str) -> None:
    (histogram,) = svgs(page, "histogram")
    counts = [int(c) for c in attr_values(histogram, "rect", "hbin", "data-count")]
    assert sum(counts) == 8
    assert len(attr_values(histogram, "line", "mark", "x1")) == 3
    # nearest rank over 515, 825, 1230, 2100, 3020, 3112, 5000, 45040 ms (the replay's method)
    assert "p50 2.10 s" in histogram and "p95 45.0 s" in histogram and "p99 45.0 s" in histogram
    assert "log scale" in histogram


def test_triggers_storms_and_whatif_tables(page: str) -> None:
    (triggers,) = svgs(page, "hbars")
    assert attr_values(triggers, "rect", "hbar", "data-count") == ["4", "2", "1", "1"]
    storms = page[page.index('id="storms"'):page.index('id="whatif"')]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", storms)
    # 2 session_timeout, 2 member_join, 1 member_leave: a tie goes to the alphabetically first code
    assert cells == ["payments", "1", "5", "2024-05-01 12:10:00.000", "2024-05-01 12:12:40.515", "2.7 min", "49.7 s",
                     "member_join", "2", "3"]
    whatif = page[page.index('id="whatif"'):page.index('id="groups"')]
    assert '<td>range</td><td>range</td><td>eager</td><td class="n" data-v="8">8</td><td class="n" data-v="6">6</td>' \
        '<td class="n" data-v="7">7</td><td class="n" data-v="0.5">0.50</td><td class="n" data-v="0.0">0.00</td>' \
        '<td class="n" data-v="0.5">+0.50</td>' in whatif
    assert ">16.6%<" in whatif and ">100%<" in whatif


def test_group_table_shows_unknown_moves_for_log_only_groups(page: str) -> None:
    groups = page[page.index('id="groups"'):page.index('id="evidence"')]
    rows = re.findall(r'<tr><td class="label">([^<]*)</td>(.*?)</tr>', groups)
    assert [name for name, _ in rows] == ["payments", "orders", "idle"]
    cells = {name: re.findall(r"<td[^>]*>([^<]*)</td>", rest) for name, rest in rows}
    assert cells["payments"][12] == "21"  # partitions moved
    assert cells["orders"][12] == "unknown"
    assert cells["idle"][1] == "0"  # episodes
    assert 'class="sortable"' in groups


def test_cards_and_diagnostics(page: str) -> None:
    cards = {label: value for value, label in
             re.findall(r'<div class="card[^"]*"><b>([^<]*)</b><span>([^<]*)</span>', page)}
    assert cards["consumer groups"] == "3"
    assert cards["generations"] == "9"
    assert cards["rebalance episodes"] == "8"
    assert cards["stop-the-world p50"] == "2.10 s"
    assert cards["storms"] == "1"
    assert cards["partitions moved"] == "21"
    assert cards["unparseable lines"] == "3"
    diagnostics = page[page.index('id="diagnostics"'):]
    assert "&lt;garbage&gt; &amp; more" in diagnostics
    assert "<td>truncated</td><td class=\"n\" data-v=\"2\">2</td>" in diagnostics
    run = page[page.index('id="run"'):]
    rows = re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", run)
    assert rows == [("inputs", "/logs/server.log\n/dumps/offsets.txt"), ("formats", "broker_log, offsets_dumplog"),
                    ("master", "local[2]"), ("what-if assignors", "range, cooperative-sticky"),
                    ("time: parse", "1.25 s"), ("time: replay", "3.50 s"), ("events", "340"),
                    ("spark version", "4.3.0"), ("tz", "UTC"), ("errors", "0")]


def test_user_supplied_text_is_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    tables = fixture_tables(orders_group=evil)
    tables["rebalance_episodes"][-1]["members_out"] = ['x" onmouseover="alert(2)']
    report = parse_report()
    report.unparsable("a.log:1", "bad", "</pre><script>alert(3)</script>")
    page = render(tables, report, META)
    check_well_formed(page)
    assert page.count("<script") == 1  # the page's own sorting script
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'onmouseover="' not in page and "onmouseover=&quot;alert(2)" in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(3)" in page
    assert [elements(t).tags[0][1]["data-group"] for t in svgs(page, "timeline")] == ["payments", evil]


def test_control_characters_in_samples_are_made_visible() -> None:
    report = ParseReport()
    report.unparsable("a.log:3", "bad", "nul\x00 and bell\x07")
    page = render({}, report, {})
    assert "nul\\x00 and bell\\x07" in page


def test_zero_groups_page_says_there_is_nothing_to_show(tmp_path: Path) -> None:
    report = ParseReport(files=1)
    report.line(10)
    report.ignore(9)
    report.unparsable("x.log:4", "not_a_log_line", "hello")
    page = write_report(tmp_path, {}, report, {"inputs": "x.log"}).read_text(encoding="utf-8")
    check_well_formed(page)
    assert "Nothing to show" in page
    cards = re.findall(r'<div class="card[^"]*"><b>([^<]*)</b><span>([^<]*)</span>', page)
    assert cards == [("0", "consumer groups"), ("10", "lines read"), ("0", "events"), ("1", "unparseable lines")]
    assert "<svg" not in page
    assert 'id="diagnostics"' in page and "not_a_log_line" in page
    summary = terminal_summary({}, report, {"inputs": "x.log"})
    assert summary.splitlines() == [
        "replay of 1 input(s)",
        "parse: 1 file(s), 10 line(s): 0 event(s), 9 unrelated line(s) skipped, 1 unparseable (not_a_log_line: 1)",
        "  unparseable x.log:4 (not_a_log_line): hello",
        "no consumer groups found in the inputs: nothing to replay",
    ]


def test_sparse_rows_are_drawn_without_the_missing_parts() -> None:
    tables = {"rebalance_episodes": [
        {"group_id": "kip848", "episode_id": 1, "t_start": T0},
        {"group_id": "kip848", "episode_id": 2, "t_start": T0 + 60 * S, "total_ms": 250.0},
        {"group_id": "no-times", "episode_id": 1},
    ]}
    page = render(tables, ParseReport(), {})
    check_well_formed(page)
    (timeline, untimed) = (svgs(page, "timeline"), page[page.index("<h3>no-times</h3>"):])
    assert len(timeline) == 1
    assert len(attr_values(timeline[0], "rect", "whole", "x")) == 2  # no join/sync split known
    assert "No episode has a start time." in untimed
    (histogram,) = svgs(page, "histogram")
    assert [int(c) for c in attr_values(histogram, "rect", "hbin", "data-count")] == [1]
    assert "2 episode(s) without a known total are left out." in page
    assert "No what-if results" in page
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert "total p50 250 ms · p95 250 ms · p99 250 ms" in lines
    assert "join  p50 unknown · p95 unknown · p99 unknown" in lines


# --- terminal summary -----------------------------------------------------------------------------------------------

def test_terminal_summary_lines() -> None:
    lines = terminal_summary(fixture_tables(), parse_report(), META).splitlines()
    assert lines == [
        "replay of 2 input(s) · formats broker_log, offsets_dumplog · master local[2]",
        "parse: 2 file(s), 1200 line(s): 340 event(s), 857 unrelated line(s) skipped, 3 unparseable "
        "(bad_timestamp: 1, truncated: 2)",
        "  unparseable server.log:17 (bad_timestamp): [2024-05-01 12:00:0x,123] INFO <garbage> & more",
        "  unparseable server.log:90 (truncated): [2024-05-01 12:00:09,123] INFO [GroupCoordinator 1]: Prep",
        "  unparseable server.log:99 (truncated): partial",
        "groups 3 · generations 9 · episodes 8 · storms 1 (in 1 group(s))",
        "join  p50 1.20 s · p95 45.0 s · p99 45.0 s",
        "total p50 2.10 s · p95 45.0 s · p99 45.0 s",
        "triggers: member_join 4, session_timeout 2, member_leave 1, unknown 1",
        "partitions moved: 21 (2 episode(s) unknown)",
        "largest storm: payments, 5 episodes in 2.7 min from 2024-05-01 12:10:00.000 UTC, mostly member_join",
        "busiest: payments 6 episode(s) (1 storm(s)) · orders 2 episode(s)",
        "headline, all groups (a change is against the actual run, over the episodes where both are known):",
        "  actual (measured): moved 21 · revocations 21 · stop-the-world p50 2.10 s / p95 45.0 s / max 45.0 s · "
        "unavailability unknown",
        "  cooperative-sticky (estimated): moved 22 (±0%) · revocations 22 (±0%) · stop-the-world p50 1.00 s / "
        "p95 1.00 s / max 1.00 s · unavailability unknown",
        "  range (estimated): moved 36 (+47.6%) · revocations 96 (+242.9%) · stop-the-world p50 1.00 s / p95 1.00 s / "
        "max 1.00 s · unavailability unknown",
        "  cooperative-sticky: reproduced 100% (6/6) of the recorded assignments",
        "  range: reproduced 16.6% (1/6) of the recorded assignments",
        "group payments:",
        "  actual (measured): moved 21 · revocations 21 · stop-the-world p50 1.23 s / p95 45.0 s / max 45.0 s · "
        "unavailability unknown",
        "  cooperative-sticky (estimated): moved 21 (±0%) · revocations 21 (±0%) · stop-the-world p50 1.00 s / "
        "p95 1.00 s / max 1.00 s · unavailability unknown",
        "  range (estimated): moved 31 (+47.6%) · revocations 72 (+242.9%) · stop-the-world p50 1.00 s / p95 1.00 s / "
        "max 1.00 s · unavailability unknown",
        "group orders:",
        "  actual (measured): moved unknown · revocations unknown · stop-the-world p50 3.11 s / p95 5.00 s / "
        "max 5.00 s · unavailability unknown",
        "  cooperative-sticky (estimated): moved 1 · revocations 1 · stop-the-world p50 1.00 s / p95 1.00 s / "
        "max 1.00 s · unavailability unknown",
        "  range (estimated): moved 5 · revocations 24 · stop-the-world p50 1.00 s / p95 1.00 s / max 1.00 s · "
        "unavailability unknown",
        "timings: parse 1.2 s · replay 3.5 s",
        "report: /tmp/out/report.html",
        "headline tables: /tmp/out/headline_overall.csv, headline_groups.csv, headline.json",
    ]


def test_terminal_summary_of_a_log_only_run_says_moves_are_unknown() -> None:
    orde = orders()
    tables = {"rebalance_episodes": orde, "whatif_results": [whatif(e, "range", "eager", 2, 1, None) for e in orde]}
    lines = terminal_summary(tables, ParseReport(), {}).splitlines()
    assert "partitions moved: unknown" in lines
    assert ("  range (estimated): moved 4 · revocations 24 · stop-the-world p50 1.00 s / p95 1.00 s / max 1.00 s · "
            "unavailability unknown") in lines
    assert "  range: reproduced n/a (0/0) of the recorded assignments" in lines


# --- large inputs ---------------------------------------------------------------------------------------------------

def synthetic(groups: int, episodes_each: int, hot_episodes: int) -> dict[str, list[Row]]:
    eps: list[Row] = []
    summaries: list[Row] = []
    wi: list[Row] = []
    for g in range(groups):
        name = f"group-{g:05d}"
        count = hot_episodes if g == 0 else episodes_each
        for i in range(count):
            ep = episode(name, i + 1, (i + 1, i + 1), g * 7 + i * 45, join=100.0 + g % 900, sync=5.0 + i,
                         total=105.0 + g % 900 + i, trigger=("member_join", "session_timeout")[i % 2],
                         members=(2, 3), ins=["m"], moved=i % 4)
            eps.append(ep)
            wi.append(whatif(ep, "range", "eager", i % 5, 1, reproduced=i % 2 == 0))
        summaries.append(summary_row(name, count, count, 0))
    return {"rebalance_episodes": eps, "group_summary": summaries, "whatif_results": wi}


def test_ten_thousand_groups_give_a_page_of_a_few_hundred_kilobytes(tmp_path: Path) -> None:
    tables = synthetic(10_000, 3, hot_episodes=120)
    path = write_report(tmp_path, tables, parse_report(), META)
    page = path.read_text(encoding="utf-8")
    size = path.stat().st_size
    assert size < 2_000_000, size
    check_well_formed(page)
    timelines = svgs(page, "timeline")
    assert len(timelines) == 5  # the sixth busy group, with 120 episodes, is drawn over time instead
    (over_time,) = svgs(page, "overtime")
    assert sum(int(c) for c in attr_values(over_time, "rect", "tbin", "data-count")) == 120
    assert f"Partitions moved in {MAX_LANES} of 120 episodes" in page
    moved = svgs(page, "moved")
    assert len(moved) == 6
    assert len(attr_values(moved[0], "rect", "bar", "data-series")) == MAX_LANES * 2  # actual and range
    (histogram,) = svgs(page, "histogram")
    assert sum(int(c) for c in attr_values(histogram, "rect", "hbin", "data-count")) == 120 + 9_999 * 3
    groups = page[page.index('id="groups"'):page.index('id="evidence"')]
    assert groups.count('<tr><td class="label">group-') == MAX_TABLE_GROUPS
    assert f"{10_000 - MAX_TABLE_GROUPS:,} quieter group(s) not listed" in groups
    assert len(terminal_summary(tables, parse_report(), META).splitlines()) <= 30


# --- helpers --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    (None, "unknown"), (0.25, "0.2 ms"), (7.0, "7.0 ms"), (850.0, "850 ms"), (4200.0, "4.20 s"),
    (12_500.0, "12.5 s"), (192_000.0, "3.2 min"), (5_400_000.0, "1.5 h"),
])
def test_durations_are_formatted_for_people(value: float | None, text: str) -> None:
    assert fmt_ms(value) == text


def test_percentiles_are_the_replays_nearest_rank_unless_the_run_asked_for_linear() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.99) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 0.95) == 50.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5, "linear") == 2.5


def test_a_share_below_one_is_never_shown_as_one_hundred_percent() -> None:
    assert fmt_pct(999, 1000) == "99.9%"
    assert fmt_pct(9999, 10000) == "99.9%"
    assert fmt_pct(3, 3) == "100%"
    assert fmt_pct(0, 0) == "n/a"


def test_densest_window_picks_the_tightest_run_of_episodes() -> None:
    starts = [0, 100, 200, 201, 202, 203, 900]
    rows = [{"t_start": s} for s in starts]
    assert densest_window(rows, 3) == (2, 5)
    assert densest_window(rows, 10) == (0, 7)


def test_log_bins_put_edge_values_in_the_bin_they_start_and_zero_in_the_first() -> None:
    bins = log_bins([0.0, 1.0, 10.0, 99.0, 100.0], per_decade=1)
    assert [(round(b.lo), round(b.hi), b.count) for b in bins] == [(1, 10, 2), (10, 100, 2), (100, 1000, 1)]


def test_axes_use_round_steps() -> None:
    assert nice_axis(7.0) == (8.0, [0.0, 2.0, 4.0, 6.0, 8.0])
    step, ticks = time_ticks(T0 + 3 * S, T0 + 62 * S)
    assert step == 10 * S
    assert ticks[0] == T0 + 10 * S and ticks[-1] == T0 + 60 * S
