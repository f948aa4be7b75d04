"""Sections of the page: stop-the-world histogram, triggers, storms, parse diagnostics and the run's facts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.report.data import Summary, percentiles
from rebalance_lab.replay.report.fmt import fmt_ms, fmt_ts, printable, zone_label
from rebalance_lab.replay.report.html import Cell, duration, kv_table, note, number, panel, section, table
from rebalance_lab.replay.svg import (
    Linear,
    Log,
    axis_bottom,
    axis_left,
    count_label,
    esc,
    group,
    hbar_chart,
    integer_axis,
    line,
    log_bins,
    log_ticks,
    rect,
    svg,
    text,
)

WIDTH, RIGHT = 960.0, 24.0
MAX_STORMS = 100
MAX_TRIGGERS = 12


def meta_list(meta: Mapping[str, Any], name: str) -> list[str]:
    value = meta.get(name)
    if value is None:
        return []
    if isinstance(value, str | Path):
        return [str(value)]
    if isinstance(value, Mapping):
        return [f"{k}: {v}" for k, v in value.items()]
    return [str(v) for v in value]


def formats(meta: Mapping[str, Any]) -> list[str]:
    value = meta.get("formats")
    values = value.values() if isinstance(value, Mapping) else meta_list(meta, "formats")
    return sorted({str(v) for v in values})


def run_line(meta: Mapping[str, Any]) -> str:
    inputs = meta_list(meta, "inputs")
    parts = [f"replay of {len(inputs)} input(s)"]
    if formats(meta):
        parts.append("formats " + ", ".join(formats(meta)))
    if meta.get("master"):
        parts.append(f"master {meta['master']}")
    return " · ".join(parts)


# --- stop-the-world histogram and triggers --------------------------------------------------------------------------

def _ms_tick(value: float) -> str:
    return f"{value:g} ms" if value < 1000 else f"{value / 1000:g} s"


def _marks(summary: Summary, values: Sequence[float], x: Log, top: float, bottom: float) -> list[str]:
    parts = []
    for i, (name, value) in enumerate(percentiles(summary, values)):
        if value is None:
            continue
        at = x(value)
        right = at > x.start + (x.end - x.start) * 0.8  # near the right edge the label goes left of its line
        parts += [line(at, top, at, bottom, f"mark {name}"),
                  text(at - 4 if right else at + 4, top + 10 + 13 * i, f"{name} {fmt_ms(value)}", cls="marklabel",
                       anchor="end" if right else None)]
    return parts


def histogram(summary: Summary, values: Sequence[float]) -> str:
    """Episodes by total (stop-the-world) time on a log axis, with the p50/p95/p99 marks."""
    bins = log_bins(values)
    left, top, height = 70.0, 14.0, 200.0
    x = Log(bins[0].lo, bins[-1].hi, left, WIDTH - RIGHT)
    y_top, y_ticks = integer_axis(max(b.count for b in bins))
    y = Linear(0, y_top, top + height, top)
    bars = [rect(x(b.lo) + 0.5, y(b.count), x(b.hi) - x(b.lo) - 1, y.start - y(b.count), cls="hbin",
                 title=f"{b.count:,} episode(s) from {fmt_ms(b.lo)} to {fmt_ms(b.hi)}", data={"data-count": b.count})
            for b in bins if b.count]
    ticks = log_ticks(x.lo, x.hi)
    parts = [axis_left(y, y_ticks, [count_label(t) for t in y_ticks], left, "episodes", grid_to=WIDTH - RIGHT),
             group(bars, cls="bins"), *_marks(summary, values, x, top, y.start),
             axis_bottom(x, ticks, [_ms_tick(t) for t in ticks], y.start,
                         "episode total time, prepare to last sync (log scale)")]
    return svg(parts, WIDTH, y.start + 42, cls="chart histogram", label="distribution of stop-the-world times",
               data={"data-episodes": len(values)})


def stw_section(summary: Summary) -> str:
    values = summary.values("total_ms")
    if not values:
        return section("stw", "Stop-the-world times", note("No episode has a known total time."))
    unknown = len(summary.episodes) - len(values)
    extra = f" {unknown:,} episode(s) without a known total are left out." if unknown else ""
    zeros = sum(1 for v in values if v <= 0)
    extra += f" {zeros:,} episode(s) of 0 ms are counted in the first bin." if zeros else ""
    if summary.times_estimated:
        extra += (" These times are estimated from the offsets dump's record times (a dump does not record when "
                  "a rebalance starts): add the coordinator's server.log for measured times.")
    intro = note("Each episode's total time, from the prepare to the last sync (for a KIP-848 group, from the epoch "
                 "bump to its last member's reconciliation): with the eager protocol the whole group stops for about "
                 "this long; cooperative and KIP-848 members keep the partitions they are not asked to give up."
                 f"{extra}")
    return section("stw", "Stop-the-world times", intro + panel(histogram(summary, values)))


def triggers_section(summary: Summary) -> str:
    items = summary.triggers[:MAX_TRIGGERS]
    rest = summary.triggers[MAX_TRIGGERS:]
    if rest:
        items = [*items, (f"{len(rest)} other trigger(s)", sum(c for _, c in rest))]
    chart = (panel(hbar_chart(items, label="rebalance triggers", unit="episode(s)", width=WIDTH)) if items
             else note("No episodes."))
    return section("triggers", "What triggered the rebalances", chart)


# --- tables ---------------------------------------------------------------------------------------------------------

def storms_section(summary: Summary) -> str:
    tz = summary.tz
    if not summary.storms:
        return section("storms", "Rebalance storms", note("No storms: no group rebalanced in quick succession."))
    rows = [[Cell(s.label), number(s.storm_id), number(s.episodes), Cell(fmt_ts(s.t_start, tz)),
             Cell(fmt_ts(s.t_end, tz)),
             duration(None if s.t_start is None or s.t_end is None else (s.t_end - s.t_start) / 1000),
             duration(s.total_ms), Cell(s.trigger), number(s.members_in), number(s.members_out)]
            for s in summary.storms[:MAX_STORMS]]
    omitted = len(summary.storms) - len(rows)
    body = table(["group", "storm", "episodes", f"start ({zone_label(tz)})", f"end ({zone_label(tz)})", "span",
                  "stopped (sum)", "dominant trigger", "members in", "members out"], rows)
    return section("storms", "Rebalance storms", body + (note(f"{omitted:,} more storm(s) not listed.") if omitted
                                                          else ""))




def diagnostics_section(report: ParseReport) -> str:
    counts = kv_table([("files", f"{report.files:,}"), ("lines", f"{report.lines:,}"),
                       ("events", f"{report.events:,}"), ("unrelated lines skipped", f"{report.ignored:,}"),
                       ("unparseable lines", f"{report.unparsed:,}")])
    formats = table(["format", "events"], [[Cell(f), number(c)] for f, c in sorted(report.by_format.items())])
    parts = [counts, "<h3>Events per format</h3>", formats if report.by_format else note("No events.")]
    if report.reasons:
        reasons = sorted(report.reasons.items(), key=lambda item: (-item[1], item[0]))
        parts += ["<h3>Why lines could not be parsed</h3>",
                  table(["reason", "lines"], [[Cell(r), number(c)] for r, c in reasons])]
    if report.samples:
        samples = "".join(f"<li><b>{esc(s.get('ref', '?'))}</b> ({esc(s.get('reason', '?'))})"
                          f"<pre>{esc(printable(s.get('text', '')))}</pre></li>" for s in report.samples)
        parts += ["<h3>Sample unparseable lines</h3>", f'<ul class="samples">{samples}</ul>']
    return section("diagnostics", "Parse diagnostics", "".join(parts))


def run_section(meta: Mapping[str, Any]) -> str:
    items = [("inputs", "\n".join(meta_list(meta, "inputs")) or "unknown"),
             ("formats", ", ".join(formats(meta)) or "unknown"), ("master", str(meta.get("master") or "unknown")),
             ("what-if assignors", ", ".join(meta_list(meta, "whatif_assignors")) or "none")]
    timings = meta.get("timings") or {}
    items += [(f"time: {phase}", f"{seconds:.2f} s") for phase, seconds in timings.items()]
    counts = meta.get("counts") or {}
    items += [(str(name), _plain(value)) for name, value in counts.items()]
    return section("run", "Run", kv_table(items + _other_meta(meta)))


_SHOWN_META = frozenset({"inputs", "formats", "master", "whatif_assignors", "timings", "counts", "report"})


def _plain(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _other_meta(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rest of ``meta`` that reads as one value (a runner's version, time zone, ...); lists only counted."""
    items = []
    for name, value in meta.items():
        if name in _SHOWN_META or value is None:
            continue
        if isinstance(value, str | int | float | Path):
            items.append((str(name).replace("_", " "), _plain(value)))
        elif isinstance(value, list | tuple) and name == "errors":
            items.append(("errors", f"{len(value):,}"))
    return items

