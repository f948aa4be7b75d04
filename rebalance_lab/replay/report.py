"""The replay's report: one self-contained HTML page and a short terminal summary (spec/replay-inputs.md §7.3).

Input is the derived tables of §7.2 as lists of row dicts (``rebalance_lab.replay.tables``: times are epoch
microseconds, durations float milliseconds, nulls are ``None``), the merged :class:`ParseReport`, and a
``meta`` dict describing the run. Keys read from ``meta``, all optional:

* ``inputs``: the input paths (a list, or one string); ``formats``: the formats read (a list, or a dict
  path -> format); ``master``: the Spark master; ``whatif_assignors``: the assignors replayed;
* ``timings``: seconds per phase (``{"parse": 1.2, ...}``); ``counts``: any other counts worth showing;
* ``report``: the report's path, printed at the end of :func:`terminal_summary`.

The page uses inline SVG and CSS only; a few lines of JavaScript make the group table sortable, and
the page reads the same without them. Every value that comes from the inputs (group ids, member ids,
sample lines) is HTML-escaped by :mod:`rebalance_lab.replay.svg`'s helpers or :func:`esc`. Plots are
capped (:data:`BUSY_GROUPS`, :data:`MAX_LANES`, :data:`MAX_TABLE_GROUPS`, ...) so 10,000 groups still
give a page of a few hundred kilobytes; the page says what it left out.

No pyspark or pyarrow here: the report runs on plain rows in the driver.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rebalance_lab.replay.diagnostics import ParseReport
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
    num,
    path,
    rect,
    svg,
    text,
    time_label,
    time_ticks,
    utc,
)

BUSY_GROUPS = 6  # groups drawn as timelines
MAX_LANES = 40  # episodes drawn per busy group: the densest window of this many consecutive episodes
MAX_TABLE_GROUPS = 500  # rows of the group table (the busiest first)
MAX_STORMS = 100
MAX_TRIGGERS = 12
MAX_IDS = 8  # member ids listed in one tooltip
TERMINAL_SAMPLES = 3
TERMINAL_ASSIGNORS = 6

Row = dict[str, Any]
GroupKey = tuple[str, str]  # (cluster_id or "", group_id)

DASH = "\u2013"  # an en dash, for ranges
ACTUAL_COLOUR = "#3d3d3d"
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#eeca3b")


# --- formatting -----------------------------------------------------------------------------------------------------

def fmt_ms(value: float | None) -> str:
    """A duration for people: ``850 ms``, ``4.20 s``, ``12.5 s``, ``3.2 min``, ``1.5 h``; ``unknown`` for null."""
    if value is None:
        return "unknown"
    if value < 10:
        return f"{value:.1f} ms"
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 10_000:
        return f"{value / 1000:.2f} s"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    if value < 3_600_000:
        return f"{value / 60_000:.1f} min"
    return f"{value / 3_600_000:.1f} h"


def fmt_ts(ts_us: int | None) -> str:
    return "unknown" if ts_us is None else utc(ts_us).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def fmt_pct(part: int, whole: int) -> str:
    """``95%``, ``99.5%``; never rounds a partial result up to ``100%``."""
    if not whole:
        return "n/a"
    value = math.floor(1000 * part / whole) / 10
    return f"{value:g}%"


def fmt_count(value: float, decimals: int = 0) -> str:
    """``30,237``; with ``decimals`` (or when not whole) a fixed number of decimals: ``0.50``."""
    if not decimals and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{decimals or 2}f}"


def fmt_signed(value: float, decimals: int = 0) -> str:
    """A difference, always with its sign: ``+10``, ``-3``, ``+0.50``."""
    return ("+" if value >= 0 else "-") + fmt_count(abs(value), decimals)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default; Spark's exact ``percentile``)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _printable(value: object) -> str:
    """Control characters shown as ``\\xNN``: they reach neither the page nor the terminal (escape sequences)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", str(value))


# --- the data behind both outputs -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupView:
    key: GroupKey
    label: str
    episodes: list[Row]  # ordered by (t_start, episode_id)
    summary: Row | None


@dataclass(frozen=True)
class Storm:
    label: str
    storm_id: int
    episodes: int
    t_start: int | None
    t_end: int | None
    total_ms: float
    trigger: str
    members_in: int
    members_out: int


@dataclass(frozen=True)
class Paired:
    """What-if against actual over the rows where both are known: sums (or means) and how many rows."""

    whatif: float
    actual: float
    count: int

    @property
    def delta(self) -> float:
        return self.whatif - self.actual


@dataclass(frozen=True)
class WhatIf:
    assignor: str
    mode: str
    label: str
    rows: int
    moved_all: int | None  # what-if moves over every row (also those whose actual is unknown)
    moved: Paired  # sums
    revocations: Paired  # sums
    imbalance: Paired  # means
    follow_ups: int
    est_stw_ms: float | None  # mean
    reproduced: int
    reproduced_known: int


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    assignor: str | None  # None: the actual moves


@dataclass(frozen=True)
class Summary:
    groups: list[GroupView]  # the busiest first (episodes, then label)
    generations: int
    episodes: list[Row]
    triggers: list[tuple[str, int]]
    storms: list[Storm]
    whatif: list[WhatIf]
    series: list[Series]
    whatif_moved: dict[tuple[GroupKey, int, str], int | None]  # (group, episode_id, series label)
    gen_starts: dict[tuple[GroupKey, int], list[int]]  # (group, episode_id) -> starts of its later generations

    def values(self, column: str) -> list[float]:
        return [float(e[column]) for e in self.episodes if e.get(column) is not None]

    def busy(self, count: int) -> list[GroupView]:
        return [g for g in self.groups if g.episodes][:count]


def group_key(row: Row) -> GroupKey:
    return (row.get("cluster_id") or "", str(row.get("group_id")))


def _episode_order(row: Row) -> tuple[int, int]:
    return (row.get("t_start") or 0, row.get("episode_id") or 0)


def _labels(keys: Iterable[GroupKey]) -> dict[GroupKey, str]:
    """Group ids, prefixed with their cluster only when the inputs hold several clusters."""
    keys = list(keys)
    several = len({cluster for cluster, _ in keys}) > 1
    return {k: (f"{k[0]}/{k[1]}" if several and k[0] else k[1]) for k in keys}


def _group_views(tables: Mapping[str, list[Row]]) -> list[GroupView]:
    by_group: dict[GroupKey, list[Row]] = defaultdict(list)
    for row in tables.get("rebalance_episodes", []):
        by_group[group_key(row)].append(row)
    summaries = {group_key(row): row for row in tables.get("group_summary", [])}
    keys = set(by_group) | set(summaries) | {group_key(r) for r in tables.get("group_generations", [])}
    labels = _labels(keys)
    views = [GroupView(k, labels[k], sorted(by_group.get(k, []), key=_episode_order), summaries.get(k))
             for k in keys]
    # tie-break: more episodes first, then the label, so the choice of busy groups is deterministic
    return sorted(views, key=lambda v: (-len(v.episodes), v.label))


def _triggers(episodes: Iterable[Row]) -> list[tuple[str, int]]:
    counts = Counter(e.get("trigger_code") or "unknown" for e in episodes)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _storm(label: str, storm_id: int, episodes: list[Row]) -> Storm:
    triggers = _triggers(episodes)
    ends = [e["t_end"] for e in episodes if e.get("t_end") is not None]
    return Storm(
        label=label, storm_id=storm_id, episodes=len(episodes), t_start=episodes[0].get("t_start"),
        t_end=max(ends, default=None), total_ms=sum(e.get("total_ms") or 0.0 for e in episodes),
        trigger=triggers[0][0],  # the most frequent trigger; ties go to the alphabetically first code
        members_in=sum(len(e.get("members_in") or []) for e in episodes),
        members_out=sum(len(e.get("members_out") or []) for e in episodes),
    )


def _storms(views: Iterable[GroupView]) -> list[Storm]:
    storms = []
    for view in views:
        members: dict[int, list[Row]] = defaultdict(list)
        for episode in view.episodes:
            if episode.get("storm_id") is not None:
                members[episode["storm_id"]].append(episode)
        storms += [_storm(view.label, storm_id, rows) for storm_id, rows in members.items()]
    return sorted(storms, key=lambda s: (-s.episodes, s.t_start or 0, s.label, s.storm_id))


def _paired(rows: Iterable[Row], column: str, actual: str) -> tuple[list[float], list[float]]:
    known = [(r[column], r[actual]) for r in rows if r.get(column) is not None and r.get(actual) is not None]
    return [w for w, _ in known], [a for _, a in known]


def _sums(rows: list[Row], column: str, actual: str) -> Paired:
    whatif, real = _paired(rows, column, actual)
    return Paired(sum(whatif), sum(real), len(whatif))


def _means(rows: list[Row], column: str, actual: str) -> Paired:
    whatif, real = _paired(rows, column, actual)
    if not whatif:
        return Paired(math.nan, math.nan, 0)
    return Paired(sum(whatif) / len(whatif), sum(real) / len(real), len(whatif))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _whatif(assignor: str, mode: str, label: str, rows: list[Row]) -> WhatIf:
    moved = [r["partitions_moved"] for r in rows if r.get("partitions_moved") is not None]
    verdicts = [bool(r["reproduced"]) for r in rows if r.get("reproduced") is not None]
    return WhatIf(
        assignor=assignor, mode=mode, label=label, rows=len(rows), moved_all=sum(moved) if moved else None,
        moved=_sums(rows, "partitions_moved", "actual_partitions_moved"),
        revocations=_sums(rows, "revocations", "actual_revocations"),
        imbalance=_means(rows, "imbalance", "actual_imbalance"),
        follow_ups=sum(r.get("follow_up_generations") or 0 for r in rows),
        est_stw_ms=_mean([r["est_stw_ms"] for r in rows if r.get("est_stw_ms") is not None]),
        reproduced=sum(verdicts), reproduced_known=len(verdicts),
    )


def _whatif_label(assignor: str, mode: str, modes: Counter[str]) -> str:
    """The assignor's name, with the mode only when the same assignor was replayed in several modes."""
    return f"{assignor} ({mode})" if modes[assignor] > 1 else assignor


def _whatifs(rows: list[Row]) -> list[WhatIf]:
    by_run: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        by_run[(str(row.get("assignor")), str(row.get("mode") or ""))].append(row)
    modes = Counter(assignor for assignor, _ in by_run)
    return [_whatif(a, m, _whatif_label(a, m, modes), by_run[(a, m)]) for a, m in sorted(by_run)]


def _whatif_moved(rows: list[Row], results: list[WhatIf]) -> dict[tuple[GroupKey, int, str], int | None]:
    """Moves per (group, episode, series); several rows for one episode (one per generation) add up."""
    labels = {(w.assignor, w.mode): w.label for w in results}
    moved: dict[tuple[GroupKey, int, str], int | None] = {}
    for row in rows:
        key = (group_key(row), row.get("episode_id") or 0,
               labels[(str(row.get("assignor")), str(row.get("mode") or ""))])
        value = row.get("partitions_moved")
        if value is None or (key in moved and moved[key] is None):  # one unknown part: the sum is unknown
            moved[key] = None
        else:
            moved[key] = (moved.get(key) or 0) + value
    return moved


def _gen_starts(rows: list[Row]) -> dict[tuple[GroupKey, int], list[int]]:
    """The prepare time of each generation after an episode's first: where a follow-up round began."""
    by_episode: dict[tuple[GroupKey, int], list[Row]] = defaultdict(list)
    for row in rows:
        if row.get("episode_id") is not None and row.get("t_prepare") is not None:
            by_episode[(group_key(row), row["episode_id"])].append(row)
    return {key: sorted(g["t_prepare"] for g in gens)[1:] for key, gens in by_episode.items() if len(gens) > 1}


def summarize(tables: Mapping[str, list[Row]]) -> Summary:
    """Everything both outputs show, computed once from the derived tables."""
    views = _group_views(tables)
    episodes = [e for view in views for e in view.episodes]
    whatif_rows = tables.get("whatif_results", [])
    results = _whatifs(whatif_rows)
    series = [Series("actual", ACTUAL_COLOUR, None)]
    series += [Series(w.label, PALETTE[i % len(PALETTE)], w.assignor) for i, w in enumerate(results)]
    generations = tables.get("group_generations", [])
    return Summary(
        groups=views, episodes=episodes, triggers=_triggers(episodes), storms=_storms(views),
        generations=len(generations) or sum(v.summary.get("generations") or 0 for v in views if v.summary),
        whatif=results, series=series, whatif_moved=_whatif_moved(whatif_rows, results),
        gen_starts=_gen_starts(generations),
    )


def _moved_total(episodes: Sequence[Row]) -> str:
    """Moved partitions over episodes; episodes without a recorded assignment are unknown, not zero."""
    known = [e["partitions_moved"] for e in episodes if e.get("partitions_moved") is not None]
    if not known:
        return "unknown"
    missing = len(episodes) - len(known)
    return f"{sum(known):,}" + (f" ({missing:,} episode(s) unknown)" if missing else "")


def _percentiles(values: Sequence[float]) -> list[tuple[str, float | None]]:
    return [(name, percentile(values, q)) for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))]


# --- terminal summary -----------------------------------------------------------------------------------------------

def _meta_list(meta: Mapping[str, Any], name: str) -> list[str]:
    value = meta.get(name)
    if value is None:
        return []
    if isinstance(value, str | Path):
        return [str(value)]
    if isinstance(value, Mapping):
        return [f"{k}: {v}" for k, v in value.items()]
    return [str(v) for v in value]


def _formats(meta: Mapping[str, Any]) -> list[str]:
    value = meta.get("formats")
    values = value.values() if isinstance(value, Mapping) else _meta_list(meta, "formats")
    return sorted({str(v) for v in values})


def _run_line(meta: Mapping[str, Any]) -> str:
    inputs = _meta_list(meta, "inputs")
    parts = [f"replay of {len(inputs)} input(s)"]
    if _formats(meta):
        parts.append("formats " + ", ".join(_formats(meta)))
    if meta.get("master"):
        parts.append(f"master {meta['master']}")
    return " · ".join(parts)


def _parse_lines(report: ParseReport) -> list[str]:
    lines = ["parse: " + report.summary()]
    for sample in report.samples[:TERMINAL_SAMPLES]:
        snippet = _printable(sample.get("text", ""))[:100]
        where = _printable(f"{sample.get('ref', '?')} ({sample.get('reason', '?')})")
        lines.append(f"  unparseable {where}: {snippet}")
    return lines


def _spread(name: str, values: Sequence[float]) -> str:
    return f"{name:<5} " + " · ".join(f"{q} {fmt_ms(v)}" for q, v in _percentiles(values))


def _busiest_line(summary: Summary) -> str:
    storms = Counter(s.label for s in summary.storms)
    parts = []
    for view in summary.busy(3):
        extra = f" ({storms[view.label]} storm(s))" if storms[view.label] else ""
        parts.append(f"{_printable(view.label)} {len(view.episodes)} episode(s){extra}")
    return "busiest: " + " · ".join(parts)


def _verdict(result: WhatIf) -> str:
    if result.moved.count:
        moved = (f"moved {fmt_count(result.moved.whatif)} vs {fmt_count(result.moved.actual)} actual "
                 f"({fmt_signed(result.moved.delta)})")
    else:
        moved = f"moved {'unknown' if result.moved_all is None else fmt_count(result.moved_all)} (actual unknown)"
    imbalance = "imbalance unknown"
    if result.imbalance.count:
        imbalance = (f"imbalance {result.imbalance.whatif:.2f} vs {result.imbalance.actual:.2f} "
                     f"({fmt_signed(result.imbalance.delta, 2)})")
    reproduced = fmt_pct(result.reproduced, result.reproduced_known)
    return (f"  {result.label}: {moved} · {imbalance} · reproduced {reproduced} "
            f"({result.reproduced}/{result.reproduced_known})")


def _whatif_lines(summary: Summary) -> list[str]:
    if not summary.whatif:
        return []
    lines = [f"what-if vs actual ({len(summary.whatif)} assignor run(s)):"]
    lines += [_verdict(w) for w in summary.whatif[:TERMINAL_ASSIGNORS]]
    if len(summary.whatif) > TERMINAL_ASSIGNORS:
        lines.append(f"  … {len(summary.whatif) - TERMINAL_ASSIGNORS} more in the report")
    return lines


def _group_lines(summary: Summary) -> list[str]:
    storm_groups = len({s.label for s in summary.storms})
    storms = f" (in {storm_groups:,} group(s))" if storm_groups else ""
    lines = [
        f"groups {len(summary.groups):,} · generations {summary.generations:,} · episodes "
        f"{len(summary.episodes):,} · storms {len(summary.storms):,}{storms}",
        _spread("join", summary.values("join_ms")),
        _spread("total", summary.values("total_ms")),
        "triggers: " + ", ".join(f"{code} {count:,}" for code, count in summary.triggers[:5]),
        "partitions moved: " + _moved_total(summary.episodes),
    ]
    if summary.storms:
        lines.append(_storm_line(summary.storms[0]))
    if summary.busy(1):
        lines.append(_busiest_line(summary))
    return lines + _whatif_lines(summary)


def _storm_line(storm: Storm) -> str:
    span = "" if storm.t_start is None or storm.t_end is None else f" in {fmt_ms((storm.t_end - storm.t_start) / 1000)}"
    return (f"largest storm: {_printable(storm.label)}, {storm.episodes} episodes{span} from "
            f"{fmt_ts(storm.t_start)} UTC, mostly {storm.trigger}")


def terminal_summary(tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any]) -> str:
    """A plain-text summary of at most about 25 lines for the terminal (no trailing newline)."""
    summary = summarize(tables)
    lines = [_run_line(meta), *_parse_lines(parse_report)]
    if summary.groups:
        lines += _group_lines(summary)
    else:
        lines.append("no consumer groups found in the inputs: nothing to replay")
    timings = meta.get("timings") or {}
    if timings:
        lines.append("timings: " + " · ".join(f"{phase} {seconds:.1f} s" for phase, seconds in timings.items()))
    if meta.get("report"):
        lines.append(f"report: {meta['report']}")
    return "\n".join(lines)


# --- HTML building blocks -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """A table cell: what it shows and what it sorts by (numbers sort numerically)."""

    shown: str
    sort: str | float | None = None
    numeric: bool = False

    def render(self) -> str:
        classes = " ".join(c for c in ("n" if self.numeric else "", "unknown" if self.shown == "unknown" else "") if c)
        attrs = f' class="{classes}"' if classes else ""
        if self.sort is not None:
            attrs += f' data-v="{esc(self.sort)}"'
        return f"<td{attrs}>{esc(self.shown)}</td>"


def number(value: float | None, shown: str | None = None) -> Cell:
    if value is None:
        return Cell("unknown", "", numeric=True)
    return Cell(shown if shown is not None else fmt_count(value), value, numeric=True)


def duration(value: float | None) -> Cell:
    return Cell(fmt_ms(value), "" if value is None else value, numeric=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], *, sortable: bool = False,
          spans: Sequence[tuple[str, int]] = ()) -> str:
    """A table; ``spans`` adds a first header row of (label, columns) over groups of columns."""
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"
    if spans:
        head = "<tr>" + "".join(f'<th colspan="{n}" class="span">{esc(label)}</th>' for label, n in spans) + \
            "</tr>" + head
    body = "".join("<tr>" + "".join(c.render() for c in row) + "</tr>" for row in rows)
    cls = ' class="sortable"' if sortable else ""
    return f'<div class="scroll"><table{cls}><thead>{head}</thead><tbody>{body}</tbody></table></div>'


def kv_table(items: Iterable[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in items)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def panel(content: str) -> str:
    return f'<div class="panel">{content}</div>'


def note(content: str) -> str:
    return f'<p class="note">{esc(content)}</p>'


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{body}</section>'


def legend(items: Iterable[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i style="background:{colour}"></i>{esc(label)}</span>' for label, colour in items)
    return f'<div class="legend">{spans}</div>'


# --- the timeline of one busy group ---------------------------------------------------------------------------------

WIDTH = 960.0
LEFT = 170.0
RIGHT = 24.0
LANE = 16.0
PANEL_TOP = 14.0
PANEL_HEIGHT = 70.0


def densest_window(episodes: Sequence[Row], size: int) -> tuple[int, int]:
    """The ``size`` consecutive episodes spanning the least time (the earliest such window on ties)."""
    if len(episodes) <= size:
        return 0, len(episodes)
    starts = [e["t_start"] for e in episodes]
    best = min(range(len(episodes) - size + 1), key=lambda i: (starts[i + size - 1] - starts[i], i))
    return best, best + size


def episode_end(episode: Row) -> int:
    """The episode's end; without ``t_end``, its start plus the known durations."""
    if episode.get("t_end") is not None:
        return int(episode["t_end"])
    total = episode.get("total_ms")
    if total is None:
        total = (episode.get("join_ms") or 0.0) + (episode.get("sync_ms") or 0.0)
    return int(episode["t_start"] + total * 1000)


def _time_domain(episodes: Sequence[Row]) -> tuple[int, int]:
    low = min(e["t_start"] for e in episodes)
    high = max(episode_end(e) for e in episodes)
    pad = max((high - low) // 50, 500_000)  # 2 %, at least half a second: a lone short episode stays readable
    return low - pad, high + pad


def _generations_text(episode: Row) -> str:
    first, last = episode.get("first_gen"), episode.get("last_gen")
    if first is None:
        return "?"
    return str(first) if last is None or last == first else f"{first}{DASH}{last}"


def _ids(values: Sequence[str] | None) -> str:
    values = list(values or [])
    shown = ", ".join(values[:MAX_IDS])
    return shown + (f" and {len(values) - MAX_IDS} more" if len(values) > MAX_IDS else "")


def _known(value: object) -> str:
    return "?" if value is None else str(value)


def _moves_text(episode: Row) -> str:
    if episode.get("partitions_moved") is None:
        return "partitions moved unknown (no assignment recorded)"
    text_ = f"partitions moved {episode['partitions_moved']}"
    if episode.get("partitions_total") is not None:
        text_ += f" of {episode['partitions_total']}"
    if episode.get("partitions_revoked") is not None:
        text_ += f" · revoked {episode['partitions_revoked']}"
    return text_


def episode_title(label: str, episode: Row) -> str:
    """The tooltip of one episode: everything the bar stands for."""
    trigger = episode.get("trigger_code") or "unknown"
    if episode.get("trigger_member"):
        trigger += f" by {episode['trigger_member']}"
    lines = [
        f"{label} · episode {episode.get('episode_id')} · generation {_generations_text(episode)}"
        f" ({episode.get('n_generations') or 1} generation(s))",
        f"start {fmt_ts(episode.get('t_start'))} UTC · end {fmt_ts(episode.get('t_end'))} UTC",
        f"join {fmt_ms(episode.get('join_ms'))} · sync {fmt_ms(episode.get('sync_ms'))}"
        f" · total {fmt_ms(episode.get('total_ms'))}",
        f"trigger {trigger}",
        f"members {_known(episode.get('members_before'))} → {_known(episode.get('members_after'))}",
        _moves_text(episode),
    ]
    if episode.get("members_in"):
        lines.append(f"in: {_ids(episode['members_in'])}")
    if episode.get("members_out"):
        lines.append(f"out: {_ids(episode['members_out'])}")
    if episode.get("storm_id") is not None:
        lines.append(f"part of storm {episode['storm_id']}")
    return "\n".join(lines)


def _phase_bars(episode: Row, top: float, x: Linear) -> list[str]:
    """Join then sync, or one grey bar when the split is unknown; at least a few pixels wide."""
    start, end = episode["t_start"], episode_end(episode)
    x0, x_end = x(start), max(x(end), x(start) + 3)
    join = episode.get("join_ms")
    if join is None or episode.get("sync_ms") is None:
        return [rect(x0, top, x_end - x0, 10, cls="whole")]
    x_join = min(max(x(start + join * 1000), x0 + 1.5), x_end - 1.5)
    return [rect(x0, top, x_join - x0, 10, cls="join"), rect(x_join, top, x_end - x_join, 10, cls="sync")]


def _lane(label: str, episode: Row, y: float, x: Linear, gen_starts: Sequence[int]) -> str:
    parts = [text(LEFT - 8, y + 11, f"gen {_generations_text(episode)} · {fmt_ms(episode.get('total_ms'))}",
                  anchor="end")]
    parts += _phase_bars(episode, y + 3, x)
    parts += [line(x(t), y + 1, x(t), y + 15, "genmark") for t in gen_starts]
    data = {"data-episode": episode.get("episode_id")}
    return group(parts, cls="ep" + (" storm" if episode.get("storm_id") is not None else ""),
                 title=episode_title(label, episode), data=data)


def _levels(episodes: Sequence[Row]) -> int:
    return max((e.get(c) or 0 for e in episodes for c in ("members_before", "members_after")), default=0)


def _member_step(episodes: Sequence[Row], x: Linear, y: Linear) -> str:
    """Members over time: the count before each episode from its start, the count after from its end."""
    commands: list[str] = []
    for episode in episodes:
        for at, count in ((episode["t_start"], episode.get("members_before")),
                          (episode_end(episode), episode.get("members_after"))):
            if count is None:
                continue
            commands.append(f"H{num(x(at))}V{num(y(count))}" if commands else f"M{num(x(at))} {num(y(count))}")
    if not commands:
        return ""
    commands.append(f"H{num(x.end)}")
    return path("".join(commands), cls="step")


def _marker(label: str, episode: Row, direction: Literal["in", "out"], y: float, x: float) -> str:
    """A triangle at the episode's start: up (green) above the line for members in, down (red) below for out."""
    ids = episode.get(f"members_{direction}") or []
    tip, base = (y - 10, y - 3) if direction == "in" else (y + 10, y + 3)
    return path(f"M{num(x - 4)} {num(base)}h8L{num(x)} {num(tip)}Z", cls=direction, data={"data-n": len(ids)},
                title=f"{label}: {len(ids)} member(s) {direction} at {fmt_ts(episode['t_start'])} UTC: {_ids(ids)}")


def _markers(label: str, episodes: Sequence[Row], x: Linear, y: Linear) -> list[str]:
    parts = []
    for episode in episodes:
        at = x(episode["t_start"])
        if episode.get("members_in"):
            parts.append(_marker(label, episode, "in", y(episode.get("members_after") or 0), at))
        if episode.get("members_out"):
            parts.append(_marker(label, episode, "out", y(episode.get("members_before") or 0), at))
    return parts


def _member_panel(label: str, episodes: Sequence[Row], x: Linear) -> str:
    top, ticks = integer_axis(max(_levels(episodes), 1), 3)
    y = Linear(0, top, PANEL_TOP + PANEL_HEIGHT, PANEL_TOP)
    parts = [axis_left(y, ticks, [f"{t:g}" for t in ticks], LEFT, "members", grid_to=x.end),
             _member_step(episodes, x, y), *_markers(label, episodes, x, y)]
    return group(parts, cls="members")


def _time_axis(x: Linear, low: int, high: int, y: float) -> str:
    step, ticks = time_ticks(low, high)
    first, last = fmt_ts(low)[:10], fmt_ts(high)[:10]
    span = first if first == last else f"{first} {DASH} {last}"
    title = f"time (UTC, {span})"
    return axis_bottom(x, ticks, [time_label(t, step) for t in ticks], y, title)


def timeline(view: GroupView, shown: Sequence[Row], gen_starts: Mapping[tuple[GroupKey, int], list[int]]) -> str:
    """Member count with ins and outs on top; below, one lane per episode split into join and sync."""
    low, high = _time_domain(shown)
    x = Linear(low, high, LEFT, WIDTH - RIGHT)
    lanes_top = PANEL_TOP + PANEL_HEIGHT + 16
    lanes = [_lane(view.label, e, lanes_top + i * LANE, x, gen_starts.get((view.key, e.get("episode_id") or 0), []))
             for i, e in enumerate(shown)]
    axis_y = lanes_top + LANE * len(shown) + 6
    parts = [_member_panel(view.label, shown, x), group(lanes, cls="lanes"), _time_axis(x, low, high, axis_y)]
    return svg(parts, WIDTH, axis_y + 40, cls="chart timeline", label=f"rebalance timeline of {view.label}",
               data={"data-group": view.label, "data-episodes": len(shown)})


# --- partitions moved per episode -----------------------------------------------------------------------------------

def _moved_values(summary: Summary, view: GroupView, shown: Sequence[Row]) -> list[list[int | None]]:
    values: list[list[int | None]] = [[e.get("partitions_moved") for e in shown]]
    for series in summary.series[1:]:
        values.append([summary.whatif_moved.get((view.key, e.get("episode_id") or 0, series.label))
                       for e in shown])
    return values


def _moved_bar(series: Series, value: int | None, episode: Row, box: tuple[float, float, Linear]) -> str:
    left, width, y = box
    where = f"episode {episode.get('episode_id')} (generation {_generations_text(episode)})"
    data = {"data-series": series.label, "data-value": "unknown" if value is None else value}
    if value is None:
        height = 6.0
        bar = rect(left, y.start - height, width, height, cls="bar q", data=data,
                   title=f"{where}: {series.label} moved unknown (no assignment recorded)")
    else:
        height = max(y.start - y(value), 1.0)  # a zero still shows as a hairline to hover on
        bar = rect(left, y.start - height, width, height, cls="bar", fill=series.colour, data=data,
                   title=f"{where}: {series.label} moved {value} partition(s)")
    if width < 14:  # too narrow for a number: the tooltip has it
        return bar
    shown = "?" if value is None else value
    return bar + text(left + width / 2, y.start - height - 3, shown, cls="value", anchor="middle")


def _episode_labels(shown: Sequence[Row], band: float, x0: float, y: float) -> list[str]:
    every = max(1, math.ceil(34 / band))  # about 34 px per label
    return [text(x0 + (i + 0.5) * band, y, f"g{e.get('first_gen', '?')}", anchor="middle")
            for i, e in enumerate(shown) if i % every == 0]


def moved_chart(summary: Summary, view: GroupView, shown: Sequence[Row]) -> str:
    """Bars per episode: the actual moves, then each what-if assignor's, side by side."""
    values = _moved_values(summary, view, shown)
    high = max((v for row in values for v in row if v is not None), default=0)
    top, ticks = integer_axis(max(high, 1))
    left, plot_top, plot_height = 70.0, 20.0, 150.0
    y = Linear(0, top, plot_top + plot_height, plot_top)
    band = (WIDTH - RIGHT - left) / len(shown)
    width = min(band * 0.8 / len(values), 28.0)
    inset = (band - width * len(values)) / 2
    bars = [_moved_bar(series, values[s][i], episode, (left + i * band + inset + s * width, width, y))
            for i, episode in enumerate(shown) for s, series in enumerate(summary.series)]
    x_axis = [line(left, y.start, WIDTH - RIGHT, y.start, "axis"),
              *_episode_labels(shown, band, left, y.start + 14),
              text((left + WIDTH - RIGHT) / 2, y.start + 32, "rebalance episode (first generation), in time order",
                   cls="title", anchor="middle")]
    parts = [axis_left(y, ticks, [count_label(t) for t in ticks], left, "partitions moved", grid_to=WIDTH - RIGHT),
             group(bars, cls="bars"), group(x_axis, cls="axis")]
    return svg(parts, WIDTH, y.start + 42, cls="chart moved", label=f"partitions moved per rebalance in {view.label}",
               data={"data-group": view.label, "data-series": len(values), "data-episodes": len(shown)})


# --- busy groups ----------------------------------------------------------------------------------------------------

def _window_note(view: GroupView, begin: int, end: int) -> str:
    if end - begin == len(view.episodes):
        return ""
    shown = view.episodes[begin:end]
    return note(f"Showing {end - begin} of {len(view.episodes):,} episodes: the densest window, from "
                f"{fmt_ts(shown[0]['t_start'])} to {fmt_ts(shown[-1]['t_start'])} UTC. The tables cover them all.")


def _group_facts(summary: Summary, view: GroupView) -> str:
    storms = sum(1 for s in summary.storms if s.label == view.label)
    totals = [e["total_ms"] for e in view.episodes if e.get("total_ms") is not None]
    spread = " · ".join(f"total {q} {fmt_ms(v)}" for q, v in _percentiles(totals)[:2])
    return note(f"{len(view.episodes):,} episodes · {storms} storm(s) · {spread} · partitions moved "
                f"{_moved_total(view.episodes)}")


def busy_group(summary: Summary, view: GroupView) -> str:
    timed = [e for e in view.episodes if e.get("t_start") is not None]
    if not timed:
        return f"<article class=\"group\"><h3>{esc(view.label)}</h3>{note('No episode has a start time.')}</article>"
    begin, end = densest_window(timed, MAX_LANES)
    shown = timed[begin:end]
    return (f'<article class="group"><h3>{esc(view.label)}</h3>{_group_facts(summary, view)}'
            f"{_window_note(view, begin, end)}{timeline(view, shown, summary.gen_starts)}"
            f"<h4>Partitions moved per rebalance</h4>{moved_chart(summary, view, shown)}</article>")


def busy_section(summary: Summary, count: int) -> str:
    busy = summary.busy(count)
    with_episodes = sum(1 for g in summary.groups if g.episodes)
    intro = note(f"The {len(busy)} group(s) with the most rebalance episodes, of {with_episodes:,} group(s) with "
                 f"any. Hover over a bar or marker for its details.")
    keys = legend([("join phase", "var(--join)"), ("sync phase", "var(--sync)"),
                   ("join/sync split unknown", "var(--whole)"), ("members in", "var(--in)"),
                   ("members out", "var(--out)"), ("member count", "var(--members)")])
    series = legend([(s.label, s.colour) for s in summary.series] + [("unknown (no assignment)", "#e4e4e4")])
    body = "".join(busy_group(summary, view) for view in busy)
    return section("timelines", "Busiest groups", intro + keys + series + body)


# --- stop-the-world histogram and triggers --------------------------------------------------------------------------

def _ms_tick(value: float) -> str:
    return f"{value:g} ms" if value < 1000 else f"{value / 1000:g} s"


def _marks(values: Sequence[float], x: Log, top: float, bottom: float) -> list[str]:
    parts = []
    for i, (name, value) in enumerate(_percentiles(values)):
        if value is None:
            continue
        at = x(value)
        right = at > x.start + (x.end - x.start) * 0.8  # near the right edge the label goes left of its line
        parts += [line(at, top, at, bottom, f"mark {name}"),
                  text(at - 4 if right else at + 4, top + 10 + 13 * i, f"{name} {fmt_ms(value)}", cls="marklabel",
                       anchor="end" if right else None)]
    return parts


def histogram(values: Sequence[float]) -> str:
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
             group(bars, cls="bins"), *_marks(values, x, top, y.start),
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
    intro = note("Each episode's total time, from the prepare to the last sync (for a KIP-848 group, from the epoch "
                 "bump to its last member's reconciliation): with the eager protocol the whole group stops for about "
                 "this long; cooperative and KIP-848 members keep the partitions they are not asked to give up."
                 f"{extra}")
    return section("stw", "Stop-the-world times", intro + panel(histogram(values)))


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
    if not summary.storms:
        return section("storms", "Rebalance storms", note("No storms: no group rebalanced in quick succession."))
    rows = [[Cell(s.label), number(s.storm_id), number(s.episodes), Cell(fmt_ts(s.t_start)), Cell(fmt_ts(s.t_end)),
             duration(None if s.t_start is None or s.t_end is None else (s.t_end - s.t_start) / 1000),
             duration(s.total_ms), Cell(s.trigger), number(s.members_in), number(s.members_out)]
            for s in summary.storms[:MAX_STORMS]]
    omitted = len(summary.storms) - len(rows)
    body = table(["group", "storm", "episodes", "start (UTC)", "end (UTC)", "span", "stopped (sum)",
                  "dominant trigger", "members in", "members out"], rows)
    return section("storms", "Rebalance storms", body + (note(f"{omitted:,} more storm(s) not listed.") if omitted
                                                          else ""))


def _paired_cells(pair: Paired, decimals: int = 0) -> list[Cell]:
    if not pair.count:
        return [number(None), number(None), number(None)]
    return [number(pair.whatif, fmt_count(pair.whatif, decimals)),
            number(pair.actual, fmt_count(pair.actual, decimals)),
            number(pair.delta, fmt_signed(pair.delta, decimals))]


def _whatif_row(result: WhatIf) -> list[Cell]:
    return [Cell(result.assignor), Cell(result.mode), number(result.rows), number(result.moved.count),
            *_paired_cells(result.moved), *_paired_cells(result.revocations)[:2], number(result.follow_ups),
            *_paired_cells(result.imbalance, 2), duration(result.est_stw_ms),
            Cell(fmt_pct(result.reproduced, result.reproduced_known),
                 result.reproduced / result.reproduced_known if result.reproduced_known else "", numeric=True)]


def whatif_section(summary: Summary) -> str:
    if not summary.whatif:
        return section("whatif", "What if another assignor had been used",
                       note("No what-if results: no assignor was replayed."))
    rows = [_whatif_row(w) for w in summary.whatif]
    headers = ["assignor", "mode", "episodes", "compared", "what-if", "actual", "Δ", "what-if", "actual",
               "follow-ups", "what-if", "actual", "Δ", "est. stop-the-world", "reproduced"]
    spans = [("", 4), ("partitions moved", 3), ("revocations", 2), ("", 1), ("imbalance (mean)", 3), ("", 2)]
    intro = note("Each assignor replayed on the recorded memberships. Moves, revocations and imbalance are compared "
                 "with the recorded assignment on the episodes where it is known (\"compared\"); \"reproduced\" is "
                 "the share of episodes whose what-if assignment equals the recorded one.")
    return section("whatif", "What if another assignor had been used", intro + table(headers, rows, spans=spans))


def _summary_value(view: GroupView, column: str, values: Sequence[float], q: float) -> float | None:
    if view.summary is not None and view.summary.get(column) is not None:
        return float(view.summary[column])
    return percentile(values, q)


def _group_row(view: GroupView) -> list[Cell]:
    s = view.summary or {}
    joins = [e["join_ms"] for e in view.episodes if e.get("join_ms") is not None]
    totals = [e["total_ms"] for e in view.episodes if e.get("total_ms") is not None]
    moved = [e["partitions_moved"] for e in view.episodes if e.get("partitions_moved") is not None]
    moved_value = (sum(moved) if moved else None) if view.episodes else s.get("partitions_moved")
    triggers = _triggers(view.episodes)
    storms = s.get("storms", len({e["storm_id"] for e in view.episodes if e.get("storm_id") is not None}))
    return [Cell(view.label), Cell(s.get("group_kind") or ""), number(len(view.episodes)),
            number(s.get("generations")), number(storms),
            duration(_summary_value(view, "join_ms_p50", joins, 0.5)),
            duration(_summary_value(view, "join_ms_p95", joins, 0.95)),
            duration(_summary_value(view, "total_ms_p50", totals, 0.5)),
            duration(_summary_value(view, "total_ms_p95", totals, 0.95)),
            duration(_summary_value(view, "total_ms_p99", totals, 0.99)),
            number(s.get("members_joined")), number(s.get("members_left")), number(moved_value),
            Cell(triggers[0][0] if triggers else ""), Cell(fmt_ts(s.get("first_ts")), s.get("first_ts") or "")]


def groups_section(summary: Summary) -> str:
    views = summary.groups[:MAX_TABLE_GROUPS]
    headers = ["group", "kind", "episodes", "generations", "storms", "p50", "p95", "p50", "p95", "p99", "joined",
               "left", "partitions moved", "top trigger", "first seen (UTC)"]
    spans = [("", 5), ("join phase", 2), ("total (stop-the-world)", 3), ("members", 2), ("", 3)]
    body = table(headers, (_group_row(v) for v in views), sortable=True, spans=spans)
    omitted = len(summary.groups) - len(views)
    tail = note(f"{omitted:,} quieter group(s) not listed; the group_summary table has them all.") if omitted else ""
    intro = note("The busiest groups first. Click a column heading to sort (needs JavaScript).")
    return section("groups", "Groups", intro + body + tail)


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
                          f"<pre>{esc(_printable(s.get('text', '')))}</pre></li>" for s in report.samples)
        parts += ["<h3>Sample unparseable lines</h3>", f'<ul class="samples">{samples}</ul>']
    return section("diagnostics", "Parse diagnostics", "".join(parts))


def run_section(meta: Mapping[str, Any]) -> str:
    items = [("inputs", "\n".join(_meta_list(meta, "inputs")) or "unknown"),
             ("formats", ", ".join(_formats(meta)) or "unknown"), ("master", str(meta.get("master") or "unknown")),
             ("what-if assignors", ", ".join(_meta_list(meta, "whatif_assignors")) or "none")]
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


# --- the page -------------------------------------------------------------------------------------------------------

CSS = """
:root{--join:#4c78a8;--sync:#f58518;--whole:#a8a8a8;--members:#2f7d32;--in:#2ca02c;--out:#d62728;--ink:#1f2328;
--muted:#5f6670;--line:#d8dde3;--bg:#f6f7f9;--bar:#4c78a8}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif;color:var(--ink);
background:var(--bg)}
header,main,nav{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:20px}
h1{font-size:1.6em;margin:0 0 4px}h2{margin:36px 0 8px;font-size:1.3em}h3{margin:22px 0 4px}h4{margin:14px 0 4px}
nav{margin-top:12px}nav a{margin-right:14px;color:var(--bar);text-decoration:none}
.sub,.note{color:var(--muted);margin:4px 0 8px}.note{font-size:.9em}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:10px;margin:14px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card b{display:block;font-size:1.5em;font-variant-numeric:tabular-nums}.card span{color:var(--muted);font-size:.85em}
.card.warn b{color:var(--out)}
article.group{background:#fff;border:1px solid var(--line);border-radius:8px;padding:4px 16px 14px;margin:14px 0}
svg.chart{display:block;width:100%;height:auto;background:#fff}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#333}
svg text.title{font-size:12px;fill:var(--muted)}
svg .axis line{stroke:#8a9099}svg .axis line.grid{stroke:#eceef1}
svg .join{fill:var(--join)}svg .sync{fill:var(--sync)}svg .whole{fill:var(--whole)}
svg .ep:hover rect{stroke:#000;stroke-width:1}svg .storm text{fill:var(--out)}
svg .genmark{stroke:#fff;stroke-width:1.5}
svg .step{fill:none;stroke:var(--members);stroke-width:1.8}
svg .in{fill:var(--in)}svg .out{fill:var(--out)}
svg .bar.q{fill:#e4e4e4;stroke:#9a9a9a;stroke-dasharray:2 2}
svg .hbin,svg .hbar{fill:var(--bar)}svg .hbin:hover,svg .hbar:hover,svg .bar:hover{opacity:.75}
svg .mark{stroke:var(--out);stroke-dasharray:4 3}svg .mark.p50{stroke:var(--ink)}
svg .marklabel{font-weight:600}
svg .marklabel,svg .ep text,svg text.value{paint-order:stroke;stroke:#fff;stroke-width:3px}
svg text.value{font-size:10px;fill:var(--muted)}
.legend{margin:6px 0;font-size:.9em}.legend span{display:inline-block;margin-right:16px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border-radius:2px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;background:#fff;font-size:.88em}
.panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px}
th.span{text-align:center;border-bottom:2px solid var(--line)}
th,td{padding:4px 8px;border-bottom:1px solid #eceef1;text-align:left;white-space:nowrap}
thead th{background:#eef1f5;position:sticky;top:0}table.sortable th{cursor:pointer}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.unknown{color:var(--muted);font-style:italic}
table.kv{width:auto}table.kv td{white-space:pre-wrap}
ul.samples{padding-left:18px}pre{white-space:pre-wrap;word-break:break-all;background:#fff;border:1px solid var(--line);
padding:6px 8px;margin:4px 0 10px;font-size:.85em}
.empty{margin-top:24px;background:#fff;border:1px dashed var(--line);border-radius:8px;padding:24px;text-align:center}
footer{max-width:1180px;margin:40px auto 20px;padding:0 20px;color:var(--muted);font-size:.85em}
"""

# Sorting is an extra: the table is already ordered (busiest first) and reads the same without it.
SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("thead tr:last-child th").forEach(function(th,col){
    th.addEventListener("click",function(){
      var body=table.tBodies[0],rows=Array.from(body.rows),dir=th.dataset.dir==="desc"?1:-1;
      th.dataset.dir=dir>0?"asc":"desc";
      function key(row){var c=row.cells[col];return c.dataset.v!==undefined?c.dataset.v:c.textContent;}
      rows.sort(function(a,b){
        var x=key(a),y=key(b),nx=parseFloat(x),ny=parseFloat(y);
        if(!isNaN(nx)||!isNaN(ny)){nx=isNaN(nx)?-Infinity:nx;ny=isNaN(ny)?-Infinity:ny;
          return nx===ny?0:(nx<ny?-dir:dir);}
        return x.localeCompare(y)*dir;});
      rows.forEach(function(r){body.appendChild(r);});});});});
"""


def _card(label: str, value: str, *, warn: bool = False) -> str:
    return f'<div class="card{" warn" if warn else ""}"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def cards(summary: Summary, report: ParseReport) -> str:
    """The headline numbers; without any group, only what was read."""
    unparsed = _card("unparseable lines", f"{report.unparsed:,}", warn=bool(report.unparsed))
    if not summary.groups:
        items = [_card("consumer groups", "0"), _card("lines read", f"{report.lines:,}"),
                 _card("events", f"{report.events:,}"), unparsed]
        return f'<div class="cards">{"".join(items)}</div>'
    totals = dict(_percentiles(summary.values("total_ms")))
    joins = dict(_percentiles(summary.values("join_ms")))
    items = [
        _card("consumer groups", f"{len(summary.groups):,}"),
        _card("generations", f"{summary.generations:,}"),
        _card("rebalance episodes", f"{len(summary.episodes):,}"),
        _card("stop-the-world p50", fmt_ms(totals["p50"])),
        _card("stop-the-world p95", fmt_ms(totals["p95"])),
        _card("stop-the-world p99", fmt_ms(totals["p99"])),
        _card("join phase p95", fmt_ms(joins["p95"])),
        _card("storms", f"{len(summary.storms):,}", warn=bool(summary.storms)),
        _card("partitions moved", _moved_total(summary.episodes).split(" (")[0]),
        unparsed,
    ]
    return f'<div class="cards">{"".join(items)}</div>'


def _nav(anchors: Sequence[tuple[str, str]]) -> str:
    return "<nav>" + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in anchors) + "</nav>"


def _empty_page_body() -> str:
    return ('<section id="nothing" class="empty"><h2>Nothing to show</h2><p>The inputs yielded no consumer group: '
            "no rebalance event was recognised. The parse diagnostics below say what was read and what could not "
            "be parsed.</p></section>")


def render(tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any], *,
           busy_groups: int = BUSY_GROUPS) -> str:
    """The whole page as a string (see :func:`write_report`)."""
    summary = summarize(tables)
    header = (f"<header><h1>Rebalance replay</h1><p class=\"sub\">{esc(_run_line(meta))}</p>"
              f"{cards(summary, parse_report)}</header>")
    if summary.groups:
        anchors = [("timelines", "Busiest groups"), ("stw", "Stop-the-world"), ("triggers", "Triggers"),
                   ("storms", "Storms"), ("whatif", "What-if"), ("groups", "Groups"),
                   ("diagnostics", "Parse diagnostics"), ("run", "Run")]
        sections = [busy_section(summary, busy_groups) if summary.busy(1) else "", stw_section(summary),
                    triggers_section(summary), storms_section(summary), whatif_section(summary),
                    groups_section(summary)]
    else:
        anchors = [("diagnostics", "Parse diagnostics"), ("run", "Run")]
        sections = [_empty_page_body()]
    sections += [diagnostics_section(parse_report), run_section(meta)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Rebalance replay report</title><style>{CSS}</style></head><body>{header}{_nav(anchors)}"
            f"<main>{''.join(sections)}</main><footer>rebalance-lab replay report · times in UTC</footer>"
            f"<script>{SORT_JS}</script></body></html>\n")


def write_report(out_dir: Path, tables: Mapping[str, list[Row]], parse_report: ParseReport, meta: Mapping[str, Any],
                 *, busy_groups: int = BUSY_GROUPS) -> Path:
    """Write ``out_dir/report.html`` (creating ``out_dir``) and return its path.

    ``tables`` maps the §7.2 table names to their rows; a missing table counts as empty.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "report.html"
    target.write_text(render(tables, parse_report, meta, busy_groups=busy_groups), encoding="utf-8")
    return target
