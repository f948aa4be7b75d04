"""Numbers, durations and times as the report and the terminal summary write them.

One percentile method everywhere: the replay's own (:func:`rebalance_lab.replay.summary.percentile`,
nearest rank unless the run asked for linear interpolation), so a group's p50 on a card, in its row
and in the terminal are the same number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, tzinfo

from rebalance_lab.replay import summary as group_summary
from rebalance_lab.replay.svg import utc

DASH = "\u2013"  # an en dash, for ranges
METHOD = "nearest_rank"


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


def fmt_ts(ts_us: int | None, tz: tzinfo = UTC) -> str:
    return "unknown" if ts_us is None else utc(ts_us, tz).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


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


def fmt_change(change: float | None) -> str:
    """A relative change against the actual run: ``-67%``, ``+12.5%``, ``±0%``; ``n/a`` without a base."""
    if change is None:
        return "n/a"
    if change == 0:
        return "\u00b10%"
    shown = f"{abs(change) * 100:.1f}".removesuffix(".0")
    return ("+" if change > 0 else "-") + shown + "%"


def fmt_partition_s(value_ms: float | None) -> str:
    """Partition-unavailability in partition-seconds: ``11.4 partition·s``."""
    if value_ms is None:
        return "unknown"
    seconds = value_ms / 1000
    shown = f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:,.2f}".rstrip("0").rstrip(".")
    return f"{shown} partition\u00b7s"


def relative(whatif: float, actual: float) -> float | None:
    """(what-if - actual) / actual; None when the actual is zero."""
    return None if actual == 0 else (whatif - actual) / actual


def percentile(values: Sequence[float], q: float, method: str = METHOD) -> float | None:
    """The ``q`` quantile (0 < q <= 1) with the replay's method (nearest rank by default)."""
    return group_summary.percentile(values, q * 100, method)


def printable(value: object) -> str:
    """Control characters shown as ``\\xNN``: they reach neither the page nor the terminal (escape sequences)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", str(value))


def zone_label(tz: tzinfo) -> str:
    """The zone's name as the page prints it: ``UTC``, ``Europe/Berlin``."""
    return str(getattr(tz, "key", None) or "UTC")
