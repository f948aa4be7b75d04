"""The page's comparison tables: the headline (overall and per group, sortable), the what-if details, the groups.

Every percentile here is the summary's method (:attr:`Summary.method`), over the same episodes the
cards use, so a group's p50 is one number wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from rebalance_lab.replay import coverage
from rebalance_lab.replay.report import headline
from rebalance_lab.replay.report.data import GroupView, Paired, Summary, WhatIf, triggers_of
from rebalance_lab.replay.report.fmt import (
    fmt_change,
    fmt_count,
    fmt_partition_s,
    fmt_pct,
    fmt_signed,
    fmt_ts,
    zone_label,
)
from rebalance_lab.replay.report.html import Cell, duration, note, number, section, table

MAX_TABLE_GROUPS = 500  # rows of the group table (the busiest first)
MAX_HEADLINE_GROUPS = 200  # groups in the per-group what-if table (each has a row per series)


# --- the headline ---------------------------------------------------------------------------------------------------

def _change(value: float | None) -> Cell:
    if value is None:
        return Cell("n/a", "", numeric=True)
    cls = "better" if value < 0 else "worse" if value > 0 else ""
    return Cell(fmt_change(value), value, numeric=True, cls=cls)


def _line_cells(line: headline.Line) -> list[Cell]:
    unavailable = Cell(fmt_partition_s(line.unavailable_ms), "" if line.unavailable_ms is None
                       else line.unavailable_ms / 1000, numeric=True)
    return [Cell(line.series), Cell(line.times), number(line.episodes), number(line.moved),
            _change(line.moved_change), number(line.revocations), _change(line.revocations_change),
            duration(line.stw_p50_ms), duration(line.stw_p95_ms), duration(line.stw_max_ms), unavailable,
            _change(line.unavailable_change)]


HEADERS = ["series", "times", "episodes", "moved", "change", "revocations", "change", "p50", "p95", "max",
           "partition·s", "change"]
SPANS = [("", 3), ("partitions moved", 2), ("revocations", 2), ("stop-the-world", 3),
         ("partition-unavailability", 2)]


def _classes(lines: Sequence[headline.Line]) -> list[str]:
    return ["actual" if line.series == "actual" else "" for line in lines]


def headline_section(summary: Summary) -> str:
    """The actual run and every what-if, overall and then per group (a sortable table)."""
    lines = headline.overall(summary)
    intro = note("The actual run (as recorded) beside each what-if. A change is against the actual run over the "
                 "episodes where both are known; negative is better. Stop-the-world: p50/p95/max of the episodes' "
                 "total times, measured from the logs (estimated when only offsets-dump record times were given); "
                 "a what-if's are always estimated (docs/replay-model.md). Partition-unavailability sums, over the "
                 "episodes, each partition's time without an owner.")
    overall = table(HEADERS, [_line_cells(line) for line in lines], spans=SPANS, row_classes=_classes(lines),
                    cls="headline overall")
    body = intro + overall
    if not summary.whatif:
        body += note(_no_whatif(summary))
    else:
        views = summary.groups[:MAX_HEADLINE_GROUPS]
        per = headline.per_group(summary, views)
        rows = [[Cell(line.scope, cls="label"), *_line_cells(line)] for line in per]
        body += ("<h3>Per group</h3>" + note("Click a column heading to sort (needs JavaScript).")
                 + table(["group", *HEADERS], rows, sortable=True, spans=[("", 1), *SPANS],
                         row_classes=_classes(per), cls="headline per-group", tall=True))
        if len(summary.groups) > len(views):
            body += note(f"{len(summary.groups) - len(views):,} quieter group(s) not listed; the exported "
                         "headline tables have them all.")
    return section("headline", "Headline: actual and what-if", body)


def _no_whatif(summary: Summary) -> str:
    """Why there is no what-if line, and what to add (the evidence's answer for what-if replays)."""
    what = next((c for c in coverage.coverage(summary.sources) if c.field == "whatif"), None)
    if what is not None and what.hint:
        return f"No what-if: what-if replays {what.level}: {what.hint}."
    return "No what-if was asked for: add --what-if ASSIGNOR (range, cooperative-sticky, static, ...)."


# --- the what-if details --------------------------------------------------------------------------------------------

def _paired_cells(pair: Paired, decimals: int = 0) -> list[Cell]:
    if not pair.count:
        return [number(None), number(None), number(None)]
    return [number(pair.whatif, fmt_count(pair.whatif, decimals)),
            number(pair.actual, fmt_count(pair.actual, decimals)),
            number(pair.delta, fmt_signed(pair.delta, decimals))]


def _whatif_row(result: WhatIf) -> list[Cell]:
    return [Cell(result.label), Cell(result.assignors), Cell(result.mode), number(result.rows),
            number(result.moved.count), number(result.follow_ups), *_paired_cells(result.imbalance, 2),
            duration(result.est_stw_ms),
            Cell(fmt_pct(result.reproduced, result.reproduced_known),
                 result.reproduced / result.reproduced_known if result.reproduced_known else "", numeric=True)]


def whatif_section(summary: Summary) -> str:
    if not summary.whatif:
        return section("whatif", "What if another assignor had been used",
                       note("No what-if results: no assignor was replayed."))
    rows = [_whatif_row(w) for w in summary.whatif]
    headers = ["what-if", "assignor", "mode", "episodes", "compared", "follow-ups", "what-if", "actual", "Δ",
               "est. stop-the-world (mean)", "reproduced"]
    spans = [("", 6), ("imbalance (mean)", 3), ("", 2)]
    intro = note("Each what-if replayed on the recorded memberships (its moves, revocations and times are in the "
                 "headline). Imbalance is compared with the recorded assignment on the episodes where it is known "
                 "(\"compared\"); \"reproduced\" is the share of episodes whose what-if assignment equals the "
                 "recorded one; \"follow-ups\" counts the extra rounds a cooperative assignor needed.")
    for result in summary.whatif:  # episodes a what-if could not run, counted per reason
        for reason, count in result.unknown:
            intro += note(f"{result.label}: {count:,} episode(s) unknown: {reason}.")
    return section("whatif", "What if another assignor had been used", intro + table(headers, rows, spans=spans))


# --- the groups -----------------------------------------------------------------------------------------------------

def _value(summary: Summary, view: GroupView, column: str, q: float) -> float | None:
    """From the group's episodes with the summary's method; the group_summary row only without episodes."""
    values = [float(e[column]) for e in view.episodes if e.get(column) is not None]
    if values or view.episodes:
        return summary.pct(values, q)
    stored = (view.summary or {}).get(f"{column}_p{round(q * 100)}")
    return None if stored is None else float(stored)


def _group_row(summary: Summary, view: GroupView) -> list[Cell]:
    s = view.summary or {}
    moved = [e["partitions_moved"] for e in view.episodes if e.get("partitions_moved") is not None]
    moved_value = (sum(moved) if moved else None) if view.episodes else s.get("partitions_moved")
    triggers = triggers_of(view.episodes)
    storms = s.get("storms", len({e["storm_id"] for e in view.episodes if e.get("storm_id") is not None}))
    timing = "estimated" if view.times_estimated else "measured" if view.sources else ""
    return [Cell(view.label, cls="label"), Cell(s.get("group_kind") or ""), number(len(view.episodes)),
            number(s.get("generations")), number(storms), Cell(timing),
            *(duration(_value(summary, view, "join_ms", q)) for q in (0.5, 0.95)),
            *(duration(_value(summary, view, "total_ms", q)) for q in (0.5, 0.95, 0.99)),
            number(s.get("members_joined")), number(s.get("members_left")), number(moved_value),
            Cell(triggers[0][0] if triggers else ""),
            Cell(fmt_ts(s.get("first_ts"), summary.tz)[:19], s.get("first_ts") or "")]  # to the second: narrower


def groups_section(summary: Summary) -> str:
    views = summary.groups[:MAX_TABLE_GROUPS]
    headers = ["group", "kind", "episodes", "generations", "storms", "times", "p50", "p95", "p50", "p95", "p99",
               "joined", "left", "partitions moved", "top trigger", f"first seen ({zone_label(summary.tz)})"]
    spans = [("", 6), ("join phase", 2), ("total (stop-the-world)", 3), ("members", 2), ("", 3)]
    body = table(headers, (_group_row(summary, v) for v in views), sortable=True, spans=spans, tall=True)
    omitted = len(summary.groups) - len(views)
    tail = note(f"{omitted:,} quieter group(s) not listed; the group_summary table has them all.") if omitted else ""
    intro = note("The busiest groups first. Click a column heading to sort (needs JavaScript).")
    return section("groups", "Groups", intro + body + tail)
