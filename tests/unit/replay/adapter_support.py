"""Helpers for the source-adapter tests: parse a sample or inline text, project events onto columns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.events import check
from rebalance_lab.replay.sources import FORMATS, SourceContext, load_adapters, parse_file

SAMPLES = Path(__file__).parent / "samples"

load_adapters()


def parse_sample(name: str, fmt: str = "auto", **context: Any) -> tuple[list[dict[str, Any]], ParseReport]:
    """Every event of one sample file (format sniffed unless given), each checked against the schema."""
    ctx = SourceContext(name=name, **context)
    events = [check(event) for event in parse_file(SAMPLES / name, fmt, ctx)]
    return events, ctx.report


def parse_text(text: str, fmt: str, name: str = "input.log", **context: Any) -> tuple[list[dict[str, Any]],
                                                                                        ParseReport]:
    """Every event of inline text (one adapter, no sniffing)."""
    ctx = SourceContext(name=name, **context)
    events = [check(event) for event in FORMATS[fmt].parse(text.splitlines(keepends=True), ctx)]
    return events, ctx.report


def project(events: Iterable[dict[str, Any]], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each event as a tuple of the given columns (absent = None)."""
    return [tuple(event.get(column) for column in columns) for event in events]


def us(wall: str, tz: str = "UTC", fold: int = 0) -> int:
    """A wall-clock time ``YYYY-MM-DD HH:MM:SS.fff`` in ``tz`` as epoch microseconds (``fold=1``: the
    second reading of a time a DST fall-back repeats)."""
    moment = datetime.fromisoformat(wall).replace(tzinfo=ZoneInfo(tz), fold=fold)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
