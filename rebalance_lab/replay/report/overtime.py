"""A busy group's rebalances over time: episodes per time bin, instead of one lane per episode.

Used for a group with more episodes than the timeline has lanes for. Each bar is one bin of equal
time; its hover text (an SVG ``<title>``) says when, how many rebalances, their triggers, their
stop-the-world (longest and summed) and the members that came and went. Bins holding an episode of
a storm are drawn in the storm colour.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from rebalance_lab.replay.report.data import GroupView, Row
from rebalance_lab.replay.report.fmt import DASH, fmt_ms, fmt_ts, zone_label
from rebalance_lab.replay.svg import (
    Linear,
    axis_bottom,
    axis_left,
    count_label,
    group,
    integer_axis,
    rect,
    svg,
    time_label,
    time_ticks,
)

BINS = 60
WIDTH, LEFT, RIGHT, TOP, HEIGHT = 960.0, 70.0, 24.0, 14.0, 150.0


@dataclass
class TimeBin:
    lo: int
    hi: int
    episodes: list[Row] = field(default_factory=list)

    @property
    def storm(self) -> bool:
        return any(e.get("storm_id") is not None for e in self.episodes)

    def title(self, label: str, tz: tzinfo) -> str:
        triggers = Counter(e.get("trigger_code") or "unknown" for e in self.episodes)
        totals = [e["total_ms"] for e in self.episodes if e.get("total_ms") is not None]
        members = [e["members_after"] for e in self.episodes if e.get("members_after") is not None]
        lines = [
            f"{label}: {fmt_ts(self.lo, tz)} {DASH} {fmt_ts(self.hi, tz)[11:]} {zone_label(tz)}",
            f"{len(self.episodes)} rebalance(s)" + (" (in a storm)" if self.storm else ""),
            "triggers: " + ", ".join(f"{code} {n}" for code, n in triggers.most_common(4)),
            f"stop-the-world: longest {fmt_ms(max(totals, default=None))} · summed {fmt_ms(sum(totals))}",
            f"members in {sum(len(e.get('members_in') or []) for e in self.episodes)} · out "
            f"{sum(len(e.get('members_out') or []) for e in self.episodes)}"
            + (f" · members after {min(members)}{DASH}{max(members)}" if members else ""),
        ]
        return "\n".join(lines)


def time_bins(episodes: Sequence[Row], count: int = BINS) -> list[TimeBin]:
    """``count`` equal bins from the first episode's start to the last's; each episode in the bin of its start."""
    starts = [int(e["t_start"]) for e in episodes]
    low, high = min(starts), max(starts) + 1
    width = max(-(-(high - low) // count), 1)
    bins = [TimeBin(low + i * width, low + (i + 1) * width) for i in range(count)]
    for episode, start in zip(episodes, starts, strict=True):
        bins[min((start - low) // width, count - 1)].episodes.append(episode)
    return bins


def over_time(view: GroupView, episodes: Sequence[Row], tz: tzinfo) -> str:
    """Bars of rebalances per time bin over the group's whole history, hover text on each."""
    bins = time_bins(episodes)
    top, ticks = integer_axis(max(len(b.episodes) for b in bins))
    y = Linear(0, top, TOP + HEIGHT, TOP)
    x = Linear(bins[0].lo, bins[-1].hi, LEFT, WIDTH - RIGHT)
    bars = [rect(x(b.lo) + 0.5, y(len(b.episodes)), x(b.hi) - x(b.lo) - 1, y.start - y(len(b.episodes)),
                 cls="tbin storm" if b.storm else "tbin", title=b.title(view.label, tz),
                 data={"data-count": len(b.episodes)}) for b in bins if b.episodes]
    step, times = time_ticks(bins[0].lo, bins[-1].hi)
    first, last = fmt_ts(bins[0].lo, tz)[:10], fmt_ts(bins[-1].hi, tz)[:10]
    span = first if first == last else f"{first} {DASH} {last}"
    parts = [axis_left(y, ticks, [count_label(t) for t in ticks], LEFT, "rebalances", grid_to=WIDTH - RIGHT),
             group(bars, cls="tbins"),
             axis_bottom(x, times, [time_label(t, step, tz) for t in times], y.start,
                         f"time ({zone_label(tz)}, {span})")]
    return svg(parts, WIDTH, y.start + 42, cls="chart overtime", label=f"rebalances over time in {view.label}",
               data={"data-group": view.label, "data-episodes": len(episodes)})
