"""The whole page: header cards, navigation, the sections in reading order, and :func:`write_report`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.report.compare import groups_section, headline_section, whatif_section
from rebalance_lab.replay.report.data import Row, Summary, moved_total, percentiles, summarize
from rebalance_lab.replay.report.evidence import evidence_section
from rebalance_lab.replay.report.export import export_tables
from rebalance_lab.replay.report.fmt import fmt_ms, fmt_partition_s, zone_label
from rebalance_lab.replay.report.html import CSS, SORT_JS
from rebalance_lab.replay.report.sections import (
    diagnostics_section,
    run_line,
    run_section,
    storms_section,
    stw_section,
    triggers_section,
)
from rebalance_lab.replay.report.timeline import busy_section
from rebalance_lab.replay.svg import esc

BUSY_GROUPS = 6  # groups drawn as timelines


def _card(label: str, value: str, *, warn: bool = False) -> str:
    return f'<div class="card{" warn" if warn else ""}"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def _unavailable(summary: Summary) -> str:
    known = [e["unowned_partition_ms"] for e in summary.episodes if e.get("unowned_partition_ms") is not None]
    return fmt_partition_s(sum(known) if known else None)


def cards(summary: Summary, report: ParseReport) -> str:
    """The headline numbers; without any group, only what was read."""
    unparsed = _card("unparseable lines", f"{report.unparsed:,}", warn=bool(report.unparsed))
    if not summary.groups:
        items = [_card("consumer groups", "0"), _card("lines read", f"{report.lines:,}"),
                 _card("events", f"{report.events:,}"), unparsed]
        return f'<div class="cards">{"".join(items)}</div>'
    totals = dict(percentiles(summary, summary.values("total_ms")))
    joins = dict(percentiles(summary, summary.values("join_ms")))
    how = " (estimated)" if summary.times_estimated else ""
    items = [
        _card("consumer groups", f"{len(summary.groups):,}"),
        _card("generations", f"{summary.generations:,}"),
        _card("rebalance episodes", f"{len(summary.episodes):,}"),
        *(_card(f"stop-the-world {q}{how}", fmt_ms(totals[q])) for q in ("p50", "p95", "p99")),
        _card(f"join phase p95{how}", fmt_ms(joins["p95"])),
        _card("storms", f"{len(summary.storms):,}", warn=bool(summary.storms)),
        _card("partitions moved", moved_total(summary.episodes).split(" (")[0]),
        _card("partition-unavailability", _unavailable(summary)),
        unparsed,
    ]
    return f'<div class="cards">{"".join(items)}</div>'


def _nav(anchors: Sequence[tuple[str, str]]) -> str:
    return "<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in anchors) + "</nav>"


def _empty_page_body() -> str:
    return ('<section id="nothing" class="empty"><h2>Nothing to show</h2><p>The inputs yielded no consumer group: '
            "no rebalance event was recognised. The parse diagnostics below say what was read and what could not "
            "be parsed.</p></section>")


def _sections(summary: Summary, busy_groups: int) -> tuple[list[tuple[str, str]], list[str]]:
    anchors = [("headline", "Headline"), ("timelines", "Busiest groups"), ("stw", "Stop-the-world"),
               ("triggers", "Triggers"), ("storms", "Storms"), ("whatif", "What-if"), ("groups", "Groups"),
               ("evidence", "Evidence"), ("diagnostics", "Parse diagnostics"), ("run", "Run")]
    sections = [headline_section(summary), busy_section(summary, busy_groups) if summary.busy(1) else "",
                stw_section(summary), triggers_section(summary), storms_section(summary), whatif_section(summary),
                groups_section(summary), evidence_section(summary)]
    return anchors, sections


def render(tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any], *,
           busy_groups: int = BUSY_GROUPS, summary: Summary | None = None) -> str:
    """The whole page as a string (see :func:`write_report`); times in the run's ``tz`` (meta), UTC by default."""
    summary = summary or summarize(tables, meta)
    header = (f"<header><h1>Rebalance replay</h1><p class=\"sub\">{esc(run_line(meta))}</p>"
              f"{cards(summary, parse_report)}</header>")
    if summary.groups:
        anchors, sections = _sections(summary, busy_groups)
    else:
        anchors, sections = [("diagnostics", "Parse diagnostics"), ("run", "Run")], [_empty_page_body()]
    sections += [diagnostics_section(parse_report), run_section(meta)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Rebalance replay report</title><style>{CSS}</style></head><body>{header}{_nav(anchors)}"
            f"<main>{''.join(sections)}</main><footer>rebalance-lab replay report · times in "
            f"{esc(zone_label(summary.tz))}</footer><script>{SORT_JS}</script></body></html>\n")


def write_report(out_dir: Path, tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any],
                 *, busy_groups: int = BUSY_GROUPS, summary: Summary | None = None) -> Path:
    """Write ``out_dir/report.html`` and the headline tables (:mod:`.export`), creating ``out_dir``.

    ``tables`` maps the §7.2 table names to their rows; a missing table counts as empty. ``summary``: the
    tables' :func:`summarize` (``meta`` alike), when the caller shows it elsewhere too (the terminal summary).
    Returns the page's path.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summary or summarize(tables, meta)
    target = out_dir / "report.html"
    target.write_text(render(tables, parse_report, meta, busy_groups=busy_groups, summary=summary), encoding="utf-8")
    export_tables(out_dir, summary)
    return target
