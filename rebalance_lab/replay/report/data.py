"""Everything the page, the terminal summary and the exported tables show, computed once from the derived tables.

Input is the derived tables of spec/replay-inputs.md §7.2 as lists of row dicts
(:mod:`rebalance_lab.replay.tables`: times are epoch microseconds, durations float milliseconds,
nulls are ``None``). What-if rows are labelled by the what-if that was asked for (their ``whatif``
column: ``static``, ``range+static``, ``cooperative-sticky``), not by the assignor that ran: a
``--what-if static`` over a range group runs range, and is still the "static" what-if.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rebalance_lab.replay import coverage
from rebalance_lab.replay.report.fmt import METHOD, percentile

Row = dict[str, Any]
GroupKey = tuple[str, str]  # (cluster_id or "", group_id)

ACTUAL_COLOUR = "#3d3d3d"
# What-if colours: none of them is a phase colour of the timeline (join #4c78a8, sync #f58518, unknown
# #a8a8a8, members in #2ca02c, out #d62728, member count #2f7d32), so a bar is never read as a phase.
PALETTE = ("#9467bd", "#17becf", "#bcbd22", "#e377c2", "#8c564b", "#7f7f7f", "#1b5e87", "#c49c00")


@dataclass(frozen=True)
class GroupView:
    key: GroupKey
    label: str
    episodes: list[Row]  # ordered by (t_start, episode_id)
    summary: Row | None
    sources: tuple[str, ...] = ()  # canonical sources of its generations

    @property
    def times_estimated(self) -> bool:
        """Its durations come from offsets-dump record times only: estimated, never shown as measured."""
        return bool(self.sources) and coverage.times_estimated(self.sources)


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
    name: str  # the what-if as asked: "static", "range+static", "cooperative-sticky"
    assignors: str  # the assignor(s) that ran it
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
    unknown: tuple[tuple[str, int], ...] = ()  # (why an episode's what-if could not run, how many), most first


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    name: str | None  # the what-if's name; None: the actual run


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
    whatif_rows: dict[str, list[Row]]  # series label -> its whatif_results rows
    gen_starts: dict[tuple[GroupKey, int], list[int]]  # (group, episode_id) -> starts of its later generations
    sources: tuple[str, ...]  # canonical sources of the whole run
    tz: tzinfo = UTC
    tz_name: str = "UTC"
    method: str = METHOD
    #: Views of the rows that several outputs read (the headline's lines: :mod:`.headline`), made once per summary.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def values(self, column: str) -> list[float]:
        return [float(e[column]) for e in self.episodes if e.get(column) is not None]

    def busy(self, count: int) -> list[GroupView]:
        return [g for g in self.groups if g.episodes][:count]

    def pct(self, values: Sequence[float], q: float) -> float | None:
        return percentile(values, q, self.method)

    @property
    def times_estimated(self) -> bool:
        return bool(self.sources) and coverage.times_estimated(self.sources)


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
    gens: dict[GroupKey, list[Row]] = defaultdict(list)
    for row in tables.get("group_generations", []):
        gens[group_key(row)].append(row)
    summaries = {group_key(row): row for row in tables.get("group_summary", [])}
    keys = set(by_group) | set(summaries) | set(gens)
    labels = _labels(keys)
    views = [GroupView(k, labels[k], sorted(by_group.get(k, []), key=_episode_order), summaries.get(k),
                       coverage.group_sources(gens.get(k, []))) for k in keys]
    # tie-break: more episodes first, then the label, so the choice of busy groups is deterministic
    return sorted(views, key=lambda v: (-len(v.episodes), v.label))


def triggers_of(episodes: Iterable[Row]) -> list[tuple[str, int]]:
    counts = Counter(e.get("trigger_code") or "unknown" for e in episodes)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _storm(label: str, storm_id: int, episodes: list[Row]) -> Storm:
    triggers = triggers_of(episodes)
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


def whatif_name(row: Row) -> str:
    """The what-if a row belongs to: its ``whatif`` column, else (older outputs) assignor and static mode."""
    if row.get("whatif"):
        return str(row["whatif"])
    mode = str(row.get("mode") or "")
    return str(row.get("assignor")) + ("+static" if mode.endswith("+static") else "")


def _whatif(name: str, rows: list[Row]) -> WhatIf:
    moved = [r["partitions_moved"] for r in rows if r.get("partitions_moved") is not None]
    verdicts = [bool(r["reproduced"]) for r in rows if r.get("reproduced") is not None]
    assignors = sorted({str(r.get("assignor")) for r in rows})
    modes = sorted({str(r.get("mode") or "") for r in rows})
    return WhatIf(
        name=name, assignors=", ".join(assignors), mode=", ".join(modes), label=name, rows=len(rows),
        moved_all=sum(moved) if moved else None,
        moved=_sums(rows, "partitions_moved", "actual_partitions_moved"),
        revocations=_sums(rows, "revocations", "actual_revocations"),
        imbalance=_means(rows, "imbalance", "actual_imbalance"),
        follow_ups=sum(r.get("follow_up_generations") or 0 for r in rows),
        est_stw_ms=_mean([r["est_stw_ms"] for r in rows if r.get("est_stw_ms") is not None]),
        reproduced=sum(verdicts), reproduced_known=len(verdicts), unknown=_unknown_reasons(rows),
    )


def _unknown_reasons(rows: list[Row]) -> tuple[tuple[str, int], ...]:
    reasons = Counter(str(r["unknown_reason"]) for r in rows if r.get("unknown_reason"))
    return tuple(reasons.most_common())


def _by_whatif(rows: list[Row]) -> dict[str, list[Row]]:
    by_name: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_name[whatif_name(row)].append(row)
    return {name: by_name[name] for name in sorted(by_name)}


def _whatif_moved(by_name: Mapping[str, list[Row]]) -> dict[tuple[GroupKey, int, str], int | None]:
    """Moves per (group, episode, series); several rows for one episode (one per generation) add up."""
    moved: dict[tuple[GroupKey, int, str], int | None] = {}
    for name, rows in by_name.items():
        for row in rows:
            key = (group_key(row), row.get("episode_id") or 0, name)
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


def display_zone(name: object) -> tuple[tzinfo, str]:
    """The zone the report shows times in (the run's ``--tz``); UTC when none or unknown."""
    if not name or name == "UTC":
        return UTC, "UTC"
    try:
        return ZoneInfo(str(name)), str(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC, "UTC"


def _run_sources(tables: Mapping[str, list[Row]], meta: Mapping[str, Any]) -> tuple[str, ...]:
    found = coverage.group_sources(tables.get("group_generations", []))
    formats = meta.get("formats") or ()
    return found or coverage.canonical_sources(formats if not isinstance(formats, Mapping) else formats.values())


def summarize(tables: Mapping[str, list[Row]], meta: Mapping[str, Any] | None = None) -> Summary:
    """Everything the outputs show, computed once from the derived tables (``meta``: ``tz``, ``percentile``)."""
    meta = meta or {}
    views = _group_views(tables)
    episodes = [e for view in views for e in view.episodes]
    by_name = _by_whatif(tables.get("whatif_results", []))
    results = [_whatif(name, rows) for name, rows in by_name.items()]
    series = [Series("actual", ACTUAL_COLOUR, None)]
    series += [Series(w.label, PALETTE[i % len(PALETTE)], w.name) for i, w in enumerate(results)]
    generations = tables.get("group_generations", [])
    tz, tz_name = display_zone(meta.get("tz"))
    return Summary(
        groups=views, episodes=episodes, triggers=triggers_of(episodes), storms=_storms(views),
        generations=len(generations) or sum(v.summary.get("generations") or 0 for v in views if v.summary),
        whatif=results, series=series, whatif_moved=_whatif_moved(by_name), whatif_rows=by_name,
        gen_starts=_gen_starts(generations), sources=_run_sources(tables, meta), tz=tz, tz_name=tz_name,
        method=str(meta.get("percentile") or METHOD),
    )


def moved_total(episodes: Sequence[Row]) -> str:
    """Moved partitions over episodes; episodes without a recorded assignment are unknown, not zero."""
    known = [e["partitions_moved"] for e in episodes if e.get("partitions_moved") is not None]
    if not known:
        return "unknown"
    missing = len(episodes) - len(known)
    return f"{sum(known):,}" + (f" ({missing:,} episode(s) unknown)" if missing else "")


def percentiles(summary: Summary, values: Sequence[float]) -> list[tuple[str, float | None]]:
    return [(name, summary.pct(values, q)) for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))]
