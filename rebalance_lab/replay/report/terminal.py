"""The terminal summary: about 25 plain-text lines, the page's headline included.

Control characters from the inputs are shown as ``\\xNN`` (:func:`~.fmt.printable`): a group id
cannot send escape sequences to the terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.report import headline
from rebalance_lab.replay.report.data import Row, Storm, Summary, WhatIf, moved_total, percentiles, summarize
from rebalance_lab.replay.report.evidence import gap_lines
from rebalance_lab.replay.report.export import FILES
from rebalance_lab.replay.report.fmt import fmt_change, fmt_ms, fmt_partition_s, fmt_pct, fmt_ts, printable, zone_label
from rebalance_lab.replay.report.sections import run_line

TERMINAL_SAMPLES = 3
TERMINAL_ASSIGNORS = 6
TERMINAL_GROUPS = 2  # groups whose headline is printed (the busiest); the exported tables have every group


def _parse_lines(report: ParseReport) -> list[str]:
    lines = ["parse: " + report.summary()]
    for sample in report.samples[:TERMINAL_SAMPLES]:
        snippet = printable(sample.get("text", ""))[:100]
        where = printable(f"{sample.get('ref', '?')} ({sample.get('reason', '?')})")
        lines.append(f"  unparseable {where}: {snippet}")
    return lines


def _spread(summary: Summary, name: str, values: Sequence[float]) -> str:
    return f"{name:<5} " + " · ".join(f"{q} {fmt_ms(v)}" for q, v in percentiles(summary, values))


def _busiest_line(summary: Summary) -> str:
    storms = Counter(s.label for s in summary.storms)
    parts = []
    for view in summary.busy(3):
        extra = f" ({storms[view.label]} storm(s))" if storms[view.label] else ""
        parts.append(f"{printable(view.label)} {len(view.episodes)} episode(s){extra}")
    return "busiest: " + " · ".join(parts)


def _with_change(shown: str, change: float | None, series: str) -> str:
    return shown if series == "actual" or change is None else f"{shown} ({fmt_change(change)})"


def headline_line(line: headline.Line, indent: str = "  ") -> str:
    """``actual (measured): moved 23 · revocations 40 · stop-the-world p50 … · unavailability …``."""
    moved = "unknown" if line.moved is None else f"{line.moved:,}"
    revoked = "unknown" if line.revocations is None else f"{line.revocations:,}"
    return (f"{indent}{printable(line.series)} ({line.times}): "
            f"moved {_with_change(moved, line.moved_change, line.series)} · "
            f"revocations {_with_change(revoked, line.revocations_change, line.series)} · "
            f"stop-the-world p50 {fmt_ms(line.stw_p50_ms)} / p95 {fmt_ms(line.stw_p95_ms)} / "
            f"max {fmt_ms(line.stw_max_ms)} · unavailability "
            f"{_with_change(fmt_partition_s(line.unavailable_ms), line.unavailable_change, line.series)}")


def _reproduced(result: WhatIf) -> str:
    line = (f"  {printable(result.label)}: reproduced {fmt_pct(result.reproduced, result.reproduced_known)} "
            f"({result.reproduced}/{result.reproduced_known}) of the recorded assignments")
    if result.unknown:  # episodes the what-if could not run, counted with the first reason
        count = sum(n for _, n in result.unknown)
        line += f"; {count} episode(s) unknown: {printable(result.unknown[0][0])}"
    return line


def _headline_lines(summary: Summary) -> list[str]:
    lines = ["headline, all groups (a change is against the actual run, over the episodes where both are known):"]
    overall = headline.overall(summary)
    lines += [headline_line(line) for line in overall[:TERMINAL_ASSIGNORS + 1]]
    if len(summary.whatif) > TERMINAL_ASSIGNORS:
        lines.append(f"  … {len(summary.whatif) - TERMINAL_ASSIGNORS} more what-if(s) in the report")
    if not summary.whatif:
        return lines
    lines += [_reproduced(w) for w in summary.whatif[:TERMINAL_ASSIGNORS]]
    busy = summary.busy(TERMINAL_GROUPS)
    if len(summary.groups) > 1:
        for line in headline.per_group(summary, busy):
            if line.series == "actual":
                lines.append(f"group {printable(line.scope)}:")
            lines.append(headline_line(line))
    return lines


def _group_lines(summary: Summary) -> list[str]:
    storm_groups = len({s.label for s in summary.storms})
    storms = f" (in {storm_groups:,} group(s))" if storm_groups else ""
    estimated = " (estimated from offsets-dump record times)" if summary.times_estimated else ""
    lines = [
        f"groups {len(summary.groups):,} · generations {summary.generations:,} · episodes "
        f"{len(summary.episodes):,} · storms {len(summary.storms):,}{storms}",
        _spread(summary, "join", summary.values("join_ms")),
        _spread(summary, "total", summary.values("total_ms")) + estimated,
        "triggers: " + ", ".join(f"{code} {count:,}" for code, count in summary.triggers[:5]),
        "partitions moved: " + moved_total(summary.episodes),
    ]
    if summary.storms:
        lines.append(_storm_line(summary, summary.storms[0]))
    if summary.busy(1):
        lines.append(_busiest_line(summary))
    return lines + _headline_lines(summary)


def _storm_line(summary: Summary, storm: Storm) -> str:
    span = "" if storm.t_start is None or storm.t_end is None else f" in {fmt_ms((storm.t_end - storm.t_start) / 1000)}"
    return (f"largest storm: {printable(storm.label)}, {storm.episodes} episodes{span} from "
            f"{fmt_ts(storm.t_start, summary.tz)} {zone_label(summary.tz)}, mostly {storm.trigger}")


def terminal_summary(tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any], *,
                     summary: Summary | None = None) -> str:
    """A plain-text summary of about 25 lines for the terminal (no trailing newline); ``summary`` as for
    :func:`~.page.write_report`."""
    summary = summary or summarize(tables, meta)
    lines = [run_line(meta), *_parse_lines(parse_report)]
    if summary.groups:
        lines += _group_lines(summary)
        gaps = gap_lines(summary)
        lines += ["evidence gaps:", *gaps] if gaps else []
    else:
        lines.append("no consumer groups found in the inputs: nothing to replay")
    timings = meta.get("timings") or {}
    if timings:
        lines.append("timings: " + " · ".join(f"{phase} {seconds:.1f} s" for phase, seconds in timings.items()))
    if meta.get("report"):
        lines.append(f"report: {meta['report']}")
        if summary.groups:  # write_report puts the headline tables beside the page
            lines.append(f"headline tables: {Path(str(meta['report'])).parent / FILES[0]}, {FILES[1]}, {FILES[2]}")
    return "\n".join(lines)
