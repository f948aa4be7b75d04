"""The replay report in a real browser (issue 20 item 6): nothing clipped, the headline table sorts, every bar has
hover text, what-if bars are not painted in phase colours. Screenshots are saved by every run.

Headless Debian chromium (installed on demand by tests/support/browser.py; without it the test fails, never
skips) loads a copy of the report with one extra script appended: it measures the laid-out page, clicks the
per-group headline table's headings as a reader would, and writes what it found into the DOM, which
``--dump-dom`` hands back. The page is built from a fixture big enough to need everything the page does at scale
(300 groups, a 120-episode group drawn over time, long group ids, two what-ifs, times in Europe/Berlin).
Screenshots go to ``$RBL_SCREENSHOTS`` (default ``build/screenshots/replay-report/``, ignored by git).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.report import write_report
from tests.support.browser import BrowserUnavailable, chromium, dump_dom
from tests.unit.replay.test_report import episode, summary_row, whatif

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (1280, 820)  # a laptop and a narrow window

# Runs after the page's own script; answers a JSON object in <pre id="checks">.
CHECKS = """
<script>
(function(){
  var out = {clipped_text: [], page_overflow: 0, cut_cells: [], titles_missing: 0, sort: {}, fills: {},
             wide_tables: []};
  document.querySelectorAll("svg.chart").forEach(function(svg){
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach(function(t){
      var r = t.getBoundingClientRect();
      if (r.width && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
                      r.bottom > box.bottom + 1)) { out.clipped_text.push(t.textContent); }
    });
  });
  out.page_overflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  document.querySelectorAll("td, th").forEach(function(c){
    if (c.scrollWidth > c.clientWidth + 1) { out.cut_cells.push(c.textContent); }
  });
  document.querySelectorAll(".scroll").forEach(function(s){
    if (s.scrollWidth > s.clientWidth + 1) {
      out.wide_tables.push(s.querySelector("th").textContent + " " + s.scrollWidth + ">" + s.clientWidth);
      if (getComputedStyle(s).overflowX !== "auto") {
        out.cut_cells.push("box of " + s.querySelector("th").textContent); }
    }
  });
  document.querySelectorAll("g.ep, rect.tbin, rect.bar, rect.hbin").forEach(function(e){
    var t = e.querySelector("title");
    if (!t || !t.textContent.trim()) { out.titles_missing += 1; }
  });
  out.ep_titles = Array.from(document.querySelectorAll("g.ep > title")).slice(0, 2).map(function(t){
    return t.textContent; });
  out.bin_titles = Array.from(document.querySelectorAll("rect.tbin > title")).slice(0, 2).map(function(t){
    return t.textContent; });
  var table = document.querySelector("table.per-group");
  var heads = table.querySelectorAll("thead tr:last-child th");
  var col = Array.from(heads).findIndex(function(th){ return th.textContent === "partition\\u00b7s"; });
  function column(){ return Array.from(table.tBodies[0].rows).map(function(r){
    var v = r.cells[col].dataset.v; return v === "" ? null : parseFloat(v); }); }
  heads[col].click(); out.sort.first = column();
  heads[col].click(); out.sort.second = column();
  out.sort.column = col;
  function fill(sel){ var e = document.querySelector(sel); return e ? getComputedStyle(e).fill : null; }
  out.fills.join = fill("svg rect.join"); out.fills.sync = fill("svg rect.sync");
  out.fills.whatif = Array.from(document.querySelectorAll("svg.moved rect.bar")).map(function(r){
    return getComputedStyle(r).fill; }).filter(function(v, i, a){ return a.indexOf(v) === i; });
  var pre = document.createElement("pre"); pre.id = "checks"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""

LONG = "payments-settlement-reconciliation-consumer-group-eu-west-1-prod"


def fixture_tables() -> dict[str, list[dict[str, Any]]]:
    """300 groups: a 120-episode storm group, a long-named busy one, and quiet ones; range and cooperative what-ifs."""
    eps, summaries, rows = [], [], []
    names = ["hot", LONG, *(f"group-{g:04d}" for g in range(298))]
    for g, name in enumerate(names):
        count = 120 if g == 0 else 12 if g == 1 else 2
        for i in range(count):
            ep = episode(name, i + 1, (i + 1, i + 1 + (i % 3 == 0)), g * 11 + i * 37, join=200.0 + 90 * (i % 7),
                         sync=15.0 + i % 5, total=230.0 + 90 * (i % 7) + g, members=(3, 3 + i % 2),
                         trigger=("member_join", "session_timeout", "member_leave")[i % 3], ins=[f"{name}-m{i}"],
                         outs=[f"{name}-m{i - 1}"] if i else [], moved=i % 6, storm=1 if g == 0 and i > 60 else None)
            ep["unowned_partition_ms"] = 12 * ep["total_ms"]
            eps.append(ep)
            for assignor, mode in (("range", "eager"), ("cooperative-sticky", "cooperative")):
                row = whatif(ep, assignor, mode, (i + g) % 5, i % 2, reproduced=i % 4 == 0)
                row["whatif"] = assignor
                row["est_unowned_partition_ms"] = (12 if mode == "eager" else 2) * ep["total_ms"]
                rows.append(row)
        summaries.append(summary_row(name, count, count, 1 if g == 0 else 0))
    gens = [{"cluster_id": "c1", "group_id": e["group_id"], "generation": e["first_gen"],
             "episode_id": e["episode_id"], "t_prepare": e["t_start"], "sources": ["broker_log", "offsets_dumplog"]}
            for e in eps]
    return {"rebalance_episodes": eps, "group_summary": summaries, "whatif_results": rows, "group_generations": gens}


def screenshot(url: str, target: Path, width: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rbl-chromium-") as profile:
        cmd = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
               f"--window-size={width},3000", f"--screenshot={target}", url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not target.is_file():
        raise BrowserUnavailable(f"chromium --screenshot exited with {proc.returncode}: {proc.stderr[-2000:]}")


@functools.cache  # one page load per width serves every test
def checks(url: str, width: int) -> dict[str, Any]:
    dom = dump_dom(url, budget_ms=3_000, timeout_s=120, extra_args=(f"--window-size={width},1000",))
    found = re.search(r'<pre id="checks">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    result: dict[str, Any] = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")
                                        .replace("&lt;", "<").replace("&gt;", ">"))
    return result


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replay-report")
    path = write_report(out, fixture_tables(), ParseReport(), {"tz": "Europe/Berlin", "inputs": ["server.log"]})
    checked = out / "checked.html"
    checked.write_text(path.read_text(encoding="utf-8").replace("</body>", CHECKS + "</body>"), encoding="utf-8")
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_the_report_reads_in_a_real_browser_with_nothing_clipped(report: Path, width: int) -> None:
    shots = Path(os.environ.get("RBL_SCREENSHOTS") or REPO / "build" / "screenshots" / "replay-report")
    shots.mkdir(parents=True, exist_ok=True)
    screenshot(report.as_uri(), shots / f"report-{width}.png", width)
    print(f"screenshot: {shots / f'report-{width}.png'}")
    found = checks((report.parent / "checked.html").as_uri(), width)
    assert found["clipped_text"] == [] and found["cut_cells"] == []
    assert found["page_overflow"] <= 0  # a table wider than the window scrolls inside its box, never the page
    if width >= 1280:
        assert found["wide_tables"] == []  # on a laptop's window every column of every table is in view
    assert found["titles_missing"] == 0
    (first, *_) = found["ep_titles"]
    assert "trigger " in first and "total " in first and "members " in first and "Europe/Berlin" in first
    assert found["bin_titles"] and "triggers: " in found["bin_titles"][0]
    assert "stop-the-world: longest" in found["bin_titles"][0] and "members in " in found["bin_titles"][0]


def test_the_per_group_headline_table_sorts_by_a_clicked_column(report: Path) -> None:
    found = checks((report.parent / "checked.html").as_uri(), WIDTHS[0])
    first, second = found["sort"]["first"], found["sort"]["second"]
    known = [v for v in first if v is not None]
    assert known == sorted(known, reverse=True) and len(known) > 100  # first click: largest first
    assert [v for v in second if v is not None] == sorted(known)
    assert found["fills"]["whatif"] and found["fills"]["join"] and found["fills"]["sync"]
    assert not {found["fills"]["join"], found["fills"]["sync"]} & set(found["fills"]["whatif"])
