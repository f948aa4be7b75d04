"""The headline: per group and overall, the actual run beside each what-if (issue 20 item 4).

One :class:`Line` per (scope, series): partitions moved, revocations, stop-the-world p50/p95/max and
partition-unavailability (partition·ms), each what-if with its change in % against the actual run.
A change is computed over the episodes where both sides are known (``paired``), so an episode
whose recorded assignment is unknown cannot make a what-if look better or worse.

Times: the actual stop-the-world is each episode's ``total_ms`` (measured when a log timed it,
*estimated* when only offsets-dump record times were given); a what-if's is its ``est_stw_ms``
(always estimated: the model of :mod:`rebalance_lab.replay.whatif`). The unavailability of the
actual run is the episode's ``unowned_partition_ms``, a what-if's its ``est_unowned_partition_ms``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rebalance_lab.replay.report.data import GroupKey, GroupView, Row, Summary, group_key
from rebalance_lab.replay.report.fmt import relative

T = TypeVar("T")

ALL = "all groups"
MEASURED, ESTIMATED = "measured", "estimated"


@dataclass(frozen=True)
class Line:
    scope: str  # a group's label, or ALL
    series: str  # "actual" or the what-if's name
    times: str  # MEASURED or ESTIMATED
    episodes: int
    moved: int | None
    moved_change: float | None  # relative to the actual run, over the paired episodes
    revocations: int | None
    revocations_change: float | None
    stw_p50_ms: float | None
    stw_p95_ms: float | None
    stw_max_ms: float | None
    unavailable_ms: float | None  # partition·ms
    unavailable_change: float | None
    paired: int  # episodes compared with the actual run (what-ifs)

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _as_int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _spread(summary: Summary, values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    return summary.pct(values, 0.5), summary.pct(values, 0.95), max(values, default=None)


def actual_line(summary: Summary, scope: str, episodes: Sequence[Row], estimated: bool) -> Line:
    totals = [float(e["total_ms"]) for e in episodes if e.get("total_ms") is not None]
    p50, p95, high = _spread(summary, totals)
    return Line(scope, "actual", ESTIMATED if estimated else MEASURED, len(episodes),
                _as_int(_sum(e.get("partitions_moved") for e in episodes)), None,
                _as_int(_sum(e.get("partitions_revoked") for e in episodes)), None, p50, p95, high,
                _sum(e.get("unowned_partition_ms") for e in episodes), None, 0)


def _change(pairs: Sequence[tuple[float | None, float | None]]) -> float | None:
    known = [(w, a) for w, a in pairs if w is not None and a is not None]
    if not known:
        return None
    return relative(sum(w for w, _ in known), sum(a for _, a in known))


def whatif_line(summary: Summary, scope: str, name: str, rows: Sequence[Row],
                episodes: dict[tuple[GroupKey, int], Row]) -> Line:
    """One what-if over ``rows``; ``episodes`` are the actual episodes by (group, episode id)."""
    stw = [float(r["est_stw_ms"]) for r in rows if r.get("est_stw_ms") is not None]
    p50, p95, high = _spread(summary, stw)
    actual = [episodes.get((group_key(r), r.get("episode_id") or 0), {}) for r in rows]
    moved = [(r.get("partitions_moved"), r.get("actual_partitions_moved")) for r in rows]
    revoked = [(r.get("revocations"), r.get("actual_revocations")) for r in rows]
    unavailable = [(r.get("est_unowned_partition_ms"), e.get("unowned_partition_ms"))
                   for r, e in zip(rows, actual, strict=True)]
    paired = sum(1 for w, a in moved if w is not None and a is not None)
    return Line(scope, name, ESTIMATED, len(rows), _as_int(_sum(w for w, _ in moved)), _change(moved),
                _as_int(_sum(w for w, _ in revoked)), _change(revoked), p50, p95, high,
                _sum(w for w, _ in unavailable), _change(unavailable), paired)


def _made_once(summary: Summary, key: str, make: Callable[[], T]) -> T:
    """``make()``, kept in ``summary.memo`` under ``key``: the page, the exported tables and the terminal all read
    the headline of one summary."""
    if key not in summary.memo:
        summary.memo[key] = make()
    made: T = summary.memo[key]
    return made


def _episode_index(summary: Summary) -> dict[tuple[GroupKey, int], Row]:
    return _made_once(summary, "episode_index",
                      lambda: {(group_key(e), e.get("episode_id") or 0): e for e in summary.episodes})


def _overall(summary: Summary) -> list[Line]:
    index = _episode_index(summary)
    lines = [actual_line(summary, ALL, summary.episodes, summary.times_estimated)]
    lines += [whatif_line(summary, ALL, name, rows, index) for name, rows in summary.whatif_rows.items()]
    return lines


def overall(summary: Summary) -> list[Line]:
    """The actual run and each what-if over every group (made once per summary)."""
    return list(_made_once(summary, "overall", lambda: _overall(summary)))


def _group_rows(summary: Summary) -> dict[str, dict[GroupKey, list[Row]]]:
    by: dict[str, dict[GroupKey, list[Row]]] = {}
    for name, rows in summary.whatif_rows.items():
        groups: dict[GroupKey, list[Row]] = {}
        for row in rows:
            groups.setdefault(group_key(row), []).append(row)
        by[name] = groups
    return by


def _rows_by_group(summary: Summary) -> dict[str, dict[GroupKey, list[Row]]]:
    return _made_once(summary, "whatif_rows_by_group", lambda: _group_rows(summary))


def per_group(summary: Summary, views: Sequence[GroupView] | None = None) -> list[Line]:
    """For each group (the busiest first; ``views`` are some of ``summary.groups``) its actual line, then one line
    per what-if. A group's lines are made once per summary: the exported tables list every group, the page and
    the terminal the busiest again (at 10,000 groups each of the three made them again: ~2 s each under cProfile)."""
    made: dict[GroupKey, list[Line]] = _made_once(summary, "per_group", dict)
    lines: list[Line] = []
    for view in summary.groups if views is None else views:
        group_lines = made.get(view.key)
        if group_lines is None:
            index, by_name = _episode_index(summary), _rows_by_group(summary)
            group_lines = [actual_line(summary, view.label, view.episodes, view.times_estimated)]
            group_lines += [whatif_line(summary, view.label, name, groups.get(view.key, []), index)
                            for name, groups in by_name.items()]
            made[view.key] = group_lines
        lines += group_lines
    return lines
