"""Tiny SVG helpers for the replay report: escaped elements, scales, ticks, axes and two plain charts.

Hand-written so the report stays one self-contained HTML file that opens offline, with no plotting
dependency. Every function returns markup as a string; every text and attribute value passes
through :func:`esc`, so group ids and member ids from logs can never become markup. Coordinates are
rounded to 0.1 user units, which keeps a page with thousands of shapes small.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

Attrs = Mapping[str, object | None]


def esc(value: object) -> str:
    """Text or attribute value, HTML-escaped (quotes included)."""
    return html.escape(str(value), quote=True)


def num(value: float) -> str:
    """A coordinate, rounded to 0.1 and without a trailing ``.0``."""
    text = f"{value:.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def _attrs(attrs: Attrs) -> str:
    return "".join(f' {name}="{esc(value)}"' for name, value in attrs.items() if value is not None)


def element(tag: str, attrs: Attrs, title: str | None = None, body: str = "") -> str:
    """One element; a ``title`` becomes the browser's tooltip (an SVG ``<title>`` child)."""
    inner = (f"<title>{esc(title)}</title>" if title else "") + body
    return f"<{tag}{_attrs(attrs)}>{inner}</{tag}>" if inner else f"<{tag}{_attrs(attrs)}/>"


def rect(x: float, y: float, w: float, h: float, *, cls: str | None = None, fill: str | None = None,
         title: str | None = None, data: Attrs | None = None) -> str:
    attrs: dict[str, object | None] = {"x": num(x), "y": num(y), "width": num(max(w, 0.0)),
                                       "height": num(max(h, 0.0)), "class": cls, "fill": fill}
    return element("rect", {**attrs, **(data or {})}, title)


def line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return element("line", {"x1": num(x1), "y1": num(y1), "x2": num(x2), "y2": num(y2), "class": cls})


def path(d: str, *, cls: str, title: str | None = None, data: Attrs | None = None) -> str:
    return element("path", {"d": d, "class": cls, **(data or {})}, title)


def text(x: float, y: float, content: object, *, cls: str | None = None, anchor: str | None = None,
         transform: str | None = None) -> str:
    attrs = {"x": num(x), "y": num(y), "class": cls, "text-anchor": anchor, "transform": transform}
    return element("text", attrs, body=esc(content))


def group(children: Iterable[str], *, cls: str | None = None, title: str | None = None,
          data: Attrs | None = None) -> str:
    return element("g", {"class": cls, **(data or {})}, title, "".join(children))


def svg(children: Iterable[str], width: float, height: float, *, cls: str, label: str,
        data: Attrs | None = None) -> str:
    """A responsive SVG: it scales to the container's width (CSS ``width:100%; height:auto``)."""
    attrs = {"viewBox": f"0 0 {num(width)} {num(height)}", "class": cls, "role": "img", "aria-label": label,
             "preserveAspectRatio": "xMinYMin meet", **(data or {})}
    return element("svg", attrs, body="".join(children))


# --- scales ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Linear:
    """Maps ``lo..hi`` onto ``start..end`` (pixels); a zero-width domain maps to ``start``."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo
        if span == 0:
            return self.start
        return self.start + (value - self.lo) / span * (self.end - self.start)


@dataclass(frozen=True)
class Log:
    """Maps ``lo..hi`` (both > 0) onto ``start..end`` on a log10 axis; values below ``lo`` clamp to it."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        low, high = math.log10(self.lo), math.log10(self.hi)
        if high == low:
            return self.start
        position = math.log10(max(value, self.lo))
        return self.start + (position - low) / (high - low) * (self.end - self.start)


Scale = Linear | Log


def nice_step(span: float, count: int) -> float:
    """The 1-2-2.5-5 step that cuts ``span`` into at most about ``count`` intervals."""
    if span <= 0:
        return 1.0
    raw = span / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)


def nice_axis(high: float, count: int = 4) -> tuple[float, list[float]]:
    """An axis from 0: its top (a multiple of the step, >= ``high``) and its ticks."""
    step = nice_step(high, count)
    top = max(step, math.ceil(high / step - 1e-9) * step)
    ticks = [round(i * step, 10) for i in range(round(top / step) + 1)]
    return top, ticks


def integer_axis(high: int, count: int = 4) -> tuple[float, list[float]]:
    """:func:`nice_axis` for counts: the step is a whole number."""
    step = max(1.0, math.ceil(nice_step(float(high), count)))
    top = max(step, math.ceil(high / step) * step)
    return top, [i * step for i in range(round(top / step) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis from ``lo`` to ``hi``: 1-2-5 steps over up to three decades, else powers of ten."""
    first, last = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    steps = (1.0, 2.0, 5.0) if last - first <= 3 else (1.0,)
    ticks = [round(m * 10.0 ** k, 12) for k in range(first, last + 1) for m in steps]
    return [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]


_MS = 1000
_S = 1_000_000
_TIME_STEPS_US = (
    *(m * _MS for m in (1, 2, 5, 10, 20, 50, 100, 200, 500)),
    *(s * _S for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)),
    *(d * 86_400 * _S for d in (1, 2, 7, 14, 28)),
)


def time_ticks(lo_us: int, hi_us: int, count: int = 6) -> tuple[int, list[int]]:
    """Round UTC times between two epoch-microsecond instants: the step and the ticks."""
    span = max(hi_us - lo_us, 1)
    step = next((s for s in _TIME_STEPS_US if span / s <= count), 0)
    if not step:
        step = _TIME_STEPS_US[-1] * math.ceil(span / (_TIME_STEPS_US[-1] * count))
    first = -(-lo_us // step) * step
    return step, list(range(first, hi_us + 1, step))


def utc(ts_us: int, tz: tzinfo = UTC) -> datetime:
    """The instant, shown in ``tz`` (UTC unless the report was asked for another zone)."""
    moment = datetime.fromtimestamp(ts_us // _S, tz=UTC).replace(microsecond=ts_us % _S)
    return moment if tz is UTC else moment.astimezone(tz)


def time_label(ts_us: int, step_us: int, tz: tzinfo = UTC) -> str:
    """A tick label as precise as the step needs (the date goes into the axis title)."""
    moment = utc(ts_us, tz)
    if step_us >= 86_400 * _S:
        return moment.strftime("%m-%d")
    if step_us >= 60 * _S:
        return moment.strftime("%H:%M")
    if step_us >= _S:
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%H:%M:%S.%f")[:-3]


# --- axes -----------------------------------------------------------------------------------------------------------

def axis_bottom(scale: Scale, ticks: Sequence[float], labels: Sequence[str], y: float, title: str) -> str:
    """A horizontal axis at ``y``: baseline, ticks, labels below and a centred title."""
    parts = [line(scale.start, y, scale.end, y, "axis")]
    for value, label in zip(ticks, labels, strict=True):
        x = scale(value)
        parts += [line(x, y, x, y + 4, "axis"), text(x, y + 15, label, anchor="middle")]
    parts.append(text((scale.start + scale.end) / 2, y + 31, title, cls="title", anchor="middle"))
    return group(parts, cls="axis")


def axis_left(scale: Scale, ticks: Sequence[float], labels: Sequence[str], x: float, title: str,
              grid_to: float | None = None) -> str:
    """A vertical axis at ``x`` with labels on the left, a rotated title, and optional grid lines."""
    parts = [line(x, scale.start, x, scale.end, "axis")]
    for value, label in zip(ticks, labels, strict=True):
        y = scale(value)
        if grid_to is not None:
            parts.append(line(x, y, grid_to, y, "grid"))
        parts += [line(x - 4, y, x, y, "axis"), text(x - 6, y + 4, label, anchor="end")]
    middle = (scale.start + scale.end) / 2
    parts.append(text(x - 38, middle, title, cls="title", anchor="middle", transform=f"rotate(-90 {num(x - 38)} "
                      f"{num(middle)})"))
    return group(parts, cls="axis")


def count_label(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{value:.3g}"


# --- two plain charts -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bin:
    lo: float
    hi: float
    count: int


def log_bins(values: Sequence[float], per_decade: int = 4) -> list[Bin]:
    """Log-spaced bins ``[lo, hi)`` from the decade below the smallest positive value up to the largest.

    Values <= 0 fall into the first bin: a log axis has no zero.
    """
    if not values:
        return []
    positive = [v for v in values if v > 0]
    low = 10.0 ** math.floor(math.log10(min(positive))) if positive else 1.0
    # +1e-9: a value on an edge (10, 100, ...) belongs to the bin it starts, despite float round-off
    indexes = [0 if v <= low else math.floor(math.log10(v / low) * per_decade + 1e-9) for v in values]
    counts = [0] * (max(indexes) + 1)
    for index in indexes:
        counts[index] += 1
    return [Bin(low * 10.0 ** (i / per_decade), low * 10.0 ** ((i + 1) / per_decade), c) for i, c in enumerate(counts)]


def hbar_chart(items: Sequence[tuple[str, int]], *, label: str, unit: str, width: float = 720,
               row: float = 22) -> str:
    """Horizontal bars, one per (name, count), longest first as given, with the count at each bar's end."""
    left, right, top = 190.0, 60.0, 8.0
    high = max((count for _, count in items), default=1)
    scale = Linear(0, high, left, width - right)
    parts = []
    for i, (name, count) in enumerate(items):
        y = top + i * row
        shown = name if len(name) <= 28 else name[:27] + "…"
        parts += [text(left - 8, y + row * 0.65, shown, anchor="end"),
                  rect(left, y + 3, scale(count) - left, row - 6, cls="hbar", title=f"{name}: {count} {unit}",
                       data={"data-count": count}),
                  text(scale(count) + 5, y + row * 0.65, count)]
    return svg(parts, width, top * 2 + row * len(items), cls="chart hbars", label=label)
