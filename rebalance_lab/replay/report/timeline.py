"""The busiest groups: a member-count panel over one lane per episode (join then sync), and partitions moved.

A group with more episodes than :data:`MAX_LANES` is drawn as its rebalances over time instead
(:mod:`rebalance_lab.replay.report.overtime`); the lanes then show its densest window only. Every
bar and marker carries its hover text (an SVG ``<title>``): trigger, durations and members.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, tzinfo
from typing import Literal

from rebalance_lab.replay.report.data import GroupKey, GroupView, Row, Series, Summary, moved_total, percentiles
from rebalance_lab.replay.report.fmt import DASH, fmt_ms, fmt_ts, zone_label
from rebalance_lab.replay.report.html import legend, note, section
from rebalance_lab.replay.report.overtime import over_time
from rebalance_lab.replay.svg import (
    Linear,
    axis_bottom,
    axis_left,
    count_label,
    esc,
    group,
    integer_axis,
    line,
    num,
    path,
    rect,
    svg,
    text,
    time_label,
    time_ticks,
)

MAX_LANES = 40  # episodes drawn per busy group: the densest window of this many consecutive episodes
MAX_IDS = 8  # member ids listed in one tooltip

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


def episode_title(label: str, episode: Row, tz: tzinfo = UTC) -> str:
    """The tooltip of one episode: everything the bar stands for (times shown in ``tz``)."""
    zone = zone_label(tz)
    trigger = episode.get("trigger_code") or "unknown"
    if episode.get("trigger_member"):
        trigger += f" by {episode['trigger_member']}"
    lines = [
        f"{label} · episode {episode.get('episode_id')} · generation {_generations_text(episode)}"
        f" ({episode.get('n_generations') or 1} generation(s))",
        f"start {fmt_ts(episode.get('t_start'), tz)} {zone} · end {fmt_ts(episode.get('t_end'), tz)} {zone}",
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


def _lane(label: str, episode: Row, y: float, x: Linear, gen_starts: Sequence[int], tz: tzinfo) -> str:
    parts = [text(LEFT - 8, y + 11, f"gen {_generations_text(episode)} · {fmt_ms(episode.get('total_ms'))}",
                  anchor="end")]
    parts += _phase_bars(episode, y + 3, x)
    parts += [line(x(t), y + 1, x(t), y + 15, "genmark") for t in gen_starts]
    data = {"data-episode": episode.get("episode_id")}
    return group(parts, cls="ep" + (" storm" if episode.get("storm_id") is not None else ""),
                 title=episode_title(label, episode, tz), data=data)


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


def _marker(label: str, episode: Row, direction: Literal["in", "out"], y: float, x: float, tz: tzinfo) -> str:
    """A triangle at the episode's start: up (green) above the line for members in, down (red) below for out."""
    ids = episode.get(f"members_{direction}") or []
    tip, base = (y - 10, y - 3) if direction == "in" else (y + 10, y + 3)
    return path(f"M{num(x - 4)} {num(base)}h8L{num(x)} {num(tip)}Z", cls=direction, data={"data-n": len(ids)},
                title=f"{label}: {len(ids)} member(s) {direction} at {fmt_ts(episode['t_start'], tz)} "
                f"{zone_label(tz)}: {_ids(ids)}")


def _markers(label: str, episodes: Sequence[Row], x: Linear, y: Linear, tz: tzinfo) -> list[str]:
    parts = []
    for episode in episodes:
        at = x(episode["t_start"])
        if episode.get("members_in"):
            parts.append(_marker(label, episode, "in", y(episode.get("members_after") or 0), at, tz))
        if episode.get("members_out"):
            parts.append(_marker(label, episode, "out", y(episode.get("members_before") or 0), at, tz))
    return parts


def _member_panel(label: str, episodes: Sequence[Row], x: Linear, tz: tzinfo) -> str:
    top, ticks = integer_axis(max(_levels(episodes), 1), 3)
    y = Linear(0, top, PANEL_TOP + PANEL_HEIGHT, PANEL_TOP)
    parts = [axis_left(y, ticks, [f"{t:g}" for t in ticks], LEFT, "members", grid_to=x.end),
             _member_step(episodes, x, y), *_markers(label, episodes, x, y, tz)]
    return group(parts, cls="members")


def time_axis(x: Linear, low: int, high: int, y: float, tz: tzinfo) -> str:
    step, ticks = time_ticks(low, high)
    first, last = fmt_ts(low, tz)[:10], fmt_ts(high, tz)[:10]
    span = first if first == last else f"{first} {DASH} {last}"
    title = f"time ({zone_label(tz)}, {span})"
    return axis_bottom(x, ticks, [time_label(t, step, tz) for t in ticks], y, title)


def timeline(view: GroupView, shown: Sequence[Row], gen_starts: Mapping[tuple[GroupKey, int], list[int]],
             tz: tzinfo = UTC) -> str:
    """Member count with ins and outs on top; below, one lane per episode split into join and sync."""
    low, high = _time_domain(shown)
    x = Linear(low, high, LEFT, WIDTH - RIGHT)
    lanes_top = PANEL_TOP + PANEL_HEIGHT + 16
    lanes = [_lane(view.label, e, lanes_top + i * LANE, x, gen_starts.get((view.key, e.get("episode_id") or 0), []),
                   tz) for i, e in enumerate(shown)]
    axis_y = lanes_top + LANE * len(shown) + 6
    parts = [_member_panel(view.label, shown, x, tz), group(lanes, cls="lanes"), time_axis(x, low, high, axis_y, tz)]
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

def _window_note(view: GroupView, begin: int, end: int, tz: tzinfo) -> str:
    if end - begin == len(view.episodes):
        return ""
    shown = view.episodes[begin:end]
    return note(f"Partitions moved in {end - begin} of {len(view.episodes):,} episodes: the densest window, from "
                f"{fmt_ts(shown[0]['t_start'], tz)} to {fmt_ts(shown[-1]['t_start'], tz)} {zone_label(tz)}. "
                "The tables cover them all.")


def _group_facts(summary: Summary, view: GroupView) -> str:
    storms = sum(1 for s in summary.storms if s.label == view.label)
    totals = [e["total_ms"] for e in view.episodes if e.get("total_ms") is not None]
    spread = " · ".join(f"total {q} {fmt_ms(v)}" for q, v in percentiles(summary, totals)[:2])
    timing = " (estimated from offsets-dump record times)" if view.times_estimated else ""
    return note(f"{len(view.episodes):,} episodes · {storms} storm(s) · {spread}{timing} · partitions moved "
                f"{moved_total(view.episodes)}")


def busy_group(summary: Summary, view: GroupView) -> str:
    timed = [e for e in view.episodes if e.get("t_start") is not None]
    if not timed:
        return f"<article class=\"group\"><h3>{esc(view.label)}</h3>{note('No episode has a start time.')}</article>"
    begin, end = densest_window(timed, MAX_LANES)
    shown = timed[begin:end]
    if len(timed) > MAX_LANES:  # one lane per episode would be unreadable: its rebalances over time instead
        chart = "<h4>Rebalances over time</h4>" + over_time(view, timed, summary.tz)
    else:
        chart = timeline(view, shown, summary.gen_starts, summary.tz)
    return (f'<article class="group"><h3>{esc(view.label)}</h3>{_group_facts(summary, view)}{chart}'
            f"<h4>Partitions moved per rebalance</h4>{_window_note(view, begin, end, summary.tz)}"
            f"{moved_chart(summary, view, shown)}</article>")


def busy_section(summary: Summary, count: int) -> str:
    busy = summary.busy(count)
    with_episodes = sum(1 for g in summary.groups if g.episodes)
    intro = note(f"The {len(busy)} group(s) with the most rebalance episodes, of {with_episodes:,} group(s) with "
                 f"any. Hover over a bar or marker for its details; a group with more than {MAX_LANES} episodes "
                 "is drawn as its rebalances over time.")
    items = [("join phase", "var(--join)"), ("sync phase", "var(--sync)"), ("join/sync split unknown", "var(--whole)"),
             ("members in", "var(--in)"), ("members out", "var(--out)"), ("member count", "var(--members)")]
    if any(len(view.episodes) > MAX_LANES for view in busy):
        items += [("rebalances per time bin", "#6b6f76"), ("time bin with a storm", "var(--out)")]
    keys = legend(items)
    series = legend([(s.label, s.colour) for s in summary.series] + [("unknown (no assignment)", "#e4e4e4")])
    body = "".join(busy_group(summary, view) for view in busy)
    return section("timelines", "Busiest groups", intro + keys + series + body)


