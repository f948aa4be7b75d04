"""The single-process replay: the same parsing and per-group model as the Spark pipeline, in a
plain Python loop (also the benchmark's baseline).

It reads every input with :func:`~rebalance_lab.replay.sources.parse_file`, groups the events
by ``(cluster_id, group_id)`` (``TOPIC_METADATA`` rows, which name no group, are each cluster's
partition counts), calls :func:`~rebalance_lab.replay.model.replay_group` per group in sorted
key order, and optionally writes each derived table as ``out_dir/<table>/part-0.parquet`` (the
schemas of :mod:`~rebalance_lab.replay.tables`) and the canonical events as
``out_dir/events/part-0.parquet``. A group whose replay raises is reported in
:attr:`LocalResult.errors` and the run goes on, as in the Spark task. Small outputs are written
without pyarrow (:func:`write_tables`), so a demo-sized run loads neither Arrow nor pandas.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_lab.replay import column_types, parquet_plain
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.gcpolicy import batch_gc
from rebalance_lab.replay.inputs import expand_inputs
from rebalance_lab.replay.model import ReplayOptions, replay_group
from rebalance_lab.replay.rows import TupleRows
from rebalance_lab.replay.sources import SourceContext, UnknownFormatError, parse_file
from rebalance_lab.replay.timeline import sort_key
from rebalance_lab.replay.whatif import Spec

if TYPE_CHECKING:  # an annotation only: a small replay never imports pyarrow (write_tables)
    import pyarrow as pa

GroupKey = tuple[str, str]


@dataclass
class LocalResult:
    """Rows of every derived table, plus what the run read and how long each phase took."""

    tables: dict[str, list[dict[str, Any]]]
    events: int  # canonical events parsed
    groups: int  # groups replayed (including those that failed)
    report: ParseReport
    errors: list[dict[str, str]] = field(default_factory=list)  # {cluster_id, group_id, error}
    seconds: dict[str, float] = field(default_factory=dict)  # "parse", "replay", "write"
    out_dir: Path | None = None


def _display_name(path: str) -> str:
    """The file's name in ``source_ref``: relative to the working directory when below it (as Spark's runner)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def parse_inputs(inputs: Sequence[str | Path], fmt: str, ctx_options: Mapping[str, Any],
                 report: ParseReport) -> list[dict[str, Any]]:
    """Every canonical event of every input file, in file order.

    A file whose format cannot be told is counted in ``report`` (reason ``unknown format``) and the
    run goes on, as in the Spark parse task (:func:`rebalance_lab.replay.tasks._events_of`): one stray
    file among good ones must not cost the replay of the rest."""
    parsed: list[dict[str, Any]] = []
    for path in expand_inputs([str(p) for p in inputs]):
        ctx = SourceContext(name=_display_name(path), report=report, **ctx_options)
        try:
            parsed.extend(parse_file(path, fmt, ctx))
        except UnknownFormatError as exc:
            report.unparsable(ctx.name, "unknown format", str(exc))
    return parsed


def split_groups(events: list[dict[str, Any]]) -> tuple[dict[GroupKey, list[dict[str, Any]]],
                                                        dict[str, list[dict[str, Any]]]]:
    """(events per group, TOPIC_METADATA events per cluster in time order)."""
    groups: dict[GroupKey, list[dict[str, Any]]] = {}
    topics: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        cluster = event.get("cluster_id") or ""
        if event["event_type"] == "TOPIC_METADATA":
            topics.setdefault(cluster, []).append(event)
        elif event.get("group_id") is not None:
            groups.setdefault((cluster, event["group_id"]), []).append(event)
    for rows in topics.values():
        rows.sort(key=sort_key)
    return groups, topics


def replay_all(groups: Mapping[GroupKey, list[dict[str, Any]]], topics: Mapping[str, list[dict[str, Any]]],
               whatif: Sequence[str], options: ReplayOptions | None
               ) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, str]]]:
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in column_types.TABLE_COLUMNS}
    errors: list[dict[str, str]] = []
    for cluster, group in sorted(groups):
        try:
            result = replay_group(groups[(cluster, group)], topics.get(cluster, []), whatif=whatif, options=options)
        except Exception as exc:  # one group's failure is reported, not fatal (as in the Spark task)
            errors.append({"cluster_id": cluster, "group_id": group, "error": f"{type(exc).__name__}: {exc}"})
            continue
        for name, rows in result.items():
            gathered = out[name]
            if not gathered and isinstance(rows, TupleRows):
                # Kept as tuples, as the Spark task gathers them (rows.py): ~300 partition_moves rows per group
                # made into dicts here cost more than their Arrow conversion (tables.to_arrow takes the tuples).
                gathered = out[name] = rows.empty()  # type: ignore[assignment]  # reads as row dicts
            gathered.extend(rows)
    return out, errors


def write_tables(out_dir: Path, rows: Mapping[str, list[dict[str, Any]]], events: list[dict[str, Any]]) -> None:
    """Each table as ``out_dir/<table>/part-0.parquet`` and the events as ``out_dir/events/part-0.parquet``.

    Small outputs are written by :mod:`.parquet_plain`, which needs no pyarrow (its import, with numpy and
    pandas, costs more than a demo-sized replay); larger ones by pyarrow, whose converter is written in C.
    Both write the same Arrow schemas (tests/unit/replay/test_parquet_plain.py)."""
    total = len(events) + sum(len(r) for r in rows.values())
    if total > parquet_plain.PLAIN_MAX_ROWS:
        _write_tables_arrow(out_dir, rows, events)
        return
    for name, columns in column_types.TABLE_COLUMNS.items():
        target = out_dir / name
        target.mkdir(parents=True, exist_ok=True)
        table_rows = rows.get(name, [])
        parquet_plain.write_table(target / "part-0.parquet", columns,
                                  table_rows.tuples if isinstance(table_rows, TupleRows) else table_rows)
    target = out_dir / "events"
    target.mkdir(parents=True, exist_ok=True)
    parquet_plain.write_table(target / "part-0.parquet", column_types.EVENT_COLUMNS, events)


def _write_tables_arrow(out_dir: Path, rows: Mapping[str, list[dict[str, Any]]], events: list[dict[str, Any]]) -> None:
    from rebalance_lab.replay import events as ev
    from rebalance_lab.replay import tables

    for name, schema in tables.TABLES.items():
        _write_arrow(out_dir / name, schema, rows.get(name, []), partial(tables.to_arrow, name))
    _write_arrow(out_dir / "events", ev.ARROW_SCHEMA, events, ev.to_arrow)


def _write_arrow(directory: Path, schema: pa.Schema, rows: Sequence[dict[str, Any]],
                 to_arrow: Callable[[Sequence[dict[str, Any]]], pa.Table]) -> None:
    """``rows`` as ``directory/part-0.parquet``, converted and written ``parts.ROWS_PER_WRITE`` at a time, as the
    Spark tasks write their part files, one row group each. Converted whole, the 1e5-event benchmark's events were
    one ~80 MB Arrow table (its members' nested lists ~34 MB), built in buffers grown by reallocation from memory new
    to the process: ~0.4 of the write's ~2 CPU-s were page faults (system time). A batch's buffers are freed before
    the next batch is converted, so the allocator reuses them (and the peak memory is a batch's)."""
    import pyarrow.parquet as pq

    from rebalance_lab.replay import parts  # pyarrow's side of the package: a small replay never imports it

    size = parts.ROWS_PER_WRITE
    directory.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(directory / "part-0.parquet", schema) as writer:  # pq.write_table's defaults (snappy)
        for start in range(0, len(rows), size):
            writer.write_table(to_arrow(_batch(rows, start, size)))


def _batch(rows: Sequence[dict[str, Any]], start: int, size: int) -> Sequence[dict[str, Any]]:
    if isinstance(rows, TupleRows):  # its slice would be row dicts: keep the tuples
        return TupleRows(rows.columns, rows.tuples[start:start + size])
    return rows[start:start + size]


def run_local(inputs: Sequence[str | Path], fmt: str = "auto", *, tz: str = "UTC", cluster_id: str = "default",
              broker_id: int | None = None, source_options: Mapping[str, Any] | None = None,
              whatif: Sequence[str] = (), options: ReplayOptions | None = None,
              out_dir: str | Path | None = None) -> LocalResult:
    """Parse ``inputs`` (files, directories, globs), replay every group, and write Parquet if ``out_dir``.

    Raises :class:`~rebalance_lab.replay.whatif.WhatIfError` for an unknown what-if name and
    :class:`~rebalance_lab.replay.inputs.InputError` for an input that names no file, before reading anything.
    """
    for name in whatif:
        Spec.parse(name)
    report = ParseReport()
    started = time.perf_counter()
    ctx_options = {"tz": tz, "cluster_id": cluster_id, "broker_id": broker_id, "options": dict(source_options or {})}
    with batch_gc():
        parsed = parse_inputs(inputs, fmt, ctx_options, report)
        groups, topics = split_groups(parsed)
    parsed_at = time.perf_counter()
    target = Path(out_dir) if out_dir is not None else None
    rows, errors, seconds = replay_and_write(groups, topics, parsed, tuple(whatif), options, target)
    return LocalResult(tables=rows, events=len(parsed), groups=len(groups), report=report, errors=errors,
                       seconds={"parse": parsed_at - started, **seconds}, out_dir=target)


def replay_and_write(groups: Mapping[GroupKey, list[dict[str, Any]]], topics: Mapping[str, list[dict[str, Any]]],
                     parsed: list[dict[str, Any]], whatif: Sequence[str], options: ReplayOptions | None,
                     out_dir: Path | None) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, str]],
                                                    dict[str, float]]:
    """Every group replayed (:func:`replay_all`) and, given ``out_dir``, the tables and ``parsed`` written
    (:func:`write_tables`): (rows per table, errors, seconds of ``replay`` and ``write``). Both run with the
    cyclic collector off, as the Spark tasks do: with it on, the write's conversions (new member tuples and
    rows, batch slices) set off ~120 young and middle collections, ~0.7 of the write's ~3.5 CPU-s at 1e5 events
    (the benchmark's rendered input, gc.callbacks)."""
    started = time.perf_counter()
    with batch_gc():
        rows, errors = replay_all(groups, topics, whatif, options)
        replayed_at = time.perf_counter()
        seconds = {"replay": replayed_at - started}
        if out_dir is not None:
            write_tables(out_dir, rows, parsed)
            seconds["write"] = time.perf_counter() - replayed_at
    return rows, errors, seconds
