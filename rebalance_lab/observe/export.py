"""``rebalance-lab export``: a recording's events written in one of the real formats.

Reads a recording (JSON Lines of ``rbl-event/1`` rows, ``docs/event-schema.md``), renders it
with :mod:`rebalance_lab.observe.formats` and writes the lines to a file or standard output.
Every problem with the input (a missing file, a line that is not a JSON object, another
schema version, an unknown format, zone or option) is an :class:`ExportError` with a
one-line message that names the file and line where there is one.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from rebalance_lab.observe.formats import FormatError, render
from rebalance_lab.replay.column_types import EVENT_COLUMNS
from rebalance_lab.replay.event_rows import TS_MAX_US, TS_MIN_US, JsonLineError, parse_json
from rebalance_lab.replay.value_check import ValueCheckError, check_columns

_SCHEMA = re.compile(r"^rbl-event/1(?:\.\d+)*$")
_NOT_CHECKED = frozenset({"ts", "detail"})  # ts: ISO text in a recording (checked above); detail: any JSON


class ExportError(ValueError):
    """The recording, the format or an option cannot be used."""


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a recording, in file order; blank lines are skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            return [row for row in (_row(path, n, line) for n, line in enumerate(f, 1)) if row is not None]
    except FileNotFoundError:
        raise ExportError(f"no such recording: {path}") from None
    except IsADirectoryError:
        raise ExportError(f"{path} is a directory, not a recording") from None
    except UnicodeDecodeError as exc:
        raise ExportError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from None


def _row(path: str | Path, number: int, line: str) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        row = parse_json(line)
    except JsonLineError as exc:
        raise ExportError(f"{path}:{number}: not valid JSON ({exc})") from None
    if not isinstance(row, dict):
        raise ExportError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
    version = row.get("schema_version")
    if not isinstance(version, str) or not _SCHEMA.match(version):
        raise ExportError(f"{path}:{number}: schema_version {version!r} is not rbl-event/1")
    ts = row.get("ts")
    if not _renderable_time(ts):
        raise ExportError(f"{path}:{number}: ts {ts!r:.60} is outside the years 2 to 9998")
    try:  # every other column's value of its type, so that no format meets one it cannot render
        check_columns(row, EVENT_COLUMNS, skip=_NOT_CHECKED)
    except ValueCheckError as exc:
        raise ExportError(f"{path}:{number}: bad value: {exc}") from None
    return row


_MS_MIN, _MS_MAX = TS_MIN_US // 1000, TS_MAX_US // 1000  # epoch ms of 0002-01-01 and 9999-01-01 (UTC)


def _renderable_time(ts: Any) -> bool:
    """False for a time every format fails on with an overflow: ISO-8601 text or epoch milliseconds within a day of
    datetime's limits (years 1 and 9999), where a time zone's shift leaves its range. A missing ts or text that is
    not ISO-8601 is left to the formats, which refuse it in one line of their own."""
    if isinstance(ts, str):
        try:
            year = datetime.fromisoformat(ts).year
        except ValueError:
            return True
        return 1 < year < 9999
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        return _MS_MIN <= ts < _MS_MAX  # (NaN compares false: refused too)
    return True


def write_lines(lines: Iterable[str], out: IO[str]) -> int:
    count = 0
    for line in lines:
        out.write(line + "\n")
        count += 1
    return count


def export(events: list[dict[str, Any]], fmt: str, out: IO[str], **options: Any) -> int:
    """Render ``events`` as ``fmt`` to ``out``; the number of lines written."""
    try:
        return write_lines(render(events, fmt, **options), out)
    except FormatError as exc:
        raise ExportError(str(exc)) from None


def export_file(recording: str | Path, fmt: str, out_path: str, **options: Any) -> int:
    """``rebalance-lab export``; ``out_path`` ``-`` is standard output. Everything is rendered
    before anything is written, so a failed export leaves no partial file."""
    events = read_events(recording)
    try:
        lines = list(render(events, fmt, **options))
    except FormatError as exc:
        raise ExportError(str(exc)) from None
    if out_path == "-":
        count = write_lines(lines, sys.stdout)
        sys.stdout.flush()
        return count
    try:
        with open(out_path, "w", encoding="utf-8") as out:
            return write_lines(lines, out)
    except OSError as exc:
        raise ExportError(f"cannot write {out_path}: {exc.strerror or exc}") from None
