"""What one Spark task does, as pure functions over Arrow: no pyspark here, so they are tested without Spark.

* :func:`parse_files` turns rows of input files into record batches of canonical
  events (:data:`events.ARROW_SCHEMA`), and hands each file's
  :class:`~rebalance_lab.replay.diagnostics.ParseReport` to a callback (the Spark
  pipeline sends it to the driver in an accumulator).
* :func:`replay_batches` replays the groups of one partition: event batches in,
  clustered by ``(cluster_id, group_id)`` (a group's rows are contiguous and may
  span batches), record batches out that carry the rows of every derived table
  (:data:`OUTPUT_SCHEMA`: a ``table`` name column, one struct column per table,
  exactly one of them set per row), so a group is replayed once however many tables
  are written, and Arrow crosses to the JVM in batches of many groups.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.gcpolicy import batch_gc

#: Events per record batch a parse task yields (Spark's own Arrow batch size, spec §6.1).
BATCH_EVENTS = 10_000

#: Input bytes a parse task aims at (Spark's own split size for files is 128 MB; parsing is slower than reading).
TASK_BYTES = 64 * 2**20

#: Output rows gathered (over whole groups) before a replay task yields a record batch.
BATCH_ROWS = 20_000

#: The input of a parse task: one row per file.
FILES_SCHEMA = pa.schema([("file_idx", pa.int32()), ("path", pa.string()), ("name", pa.string())])

#: A group whose replay raised: the run goes on, the error is reported.
ERROR = pa.struct([("cluster_id", pa.string()), ("group_id", pa.string()), ("error", pa.string())])
ERROR_TABLE = "replay_errors"

OUTPUT_SCHEMA = pa.schema([
    ("table", pa.string()),
    *[(name, pa.struct(list(schema))) for name, schema in tables.TABLES.items()],
    (ERROR_TABLE, ERROR),
])

ReportSink = Callable[[int, dict[str, Any]], None]


@dataclass(frozen=True)
class ParseSettings:
    fmt: str = "auto"
    tz: str = "UTC"
    cluster_id: str = "default"


# --- parse ----------------------------------------------------------------------------------------------------------

def parse_files(batches: Iterable[pa.RecordBatch], settings: ParseSettings,
                on_report: ReportSink) -> Iterator[pa.RecordBatch]:
    """Events of every file named in ``batches`` (:data:`FILES_SCHEMA` rows), ~:data:`BATCH_EVENTS` per batch."""
    with batch_gc():
        pending: list[dict[str, Any]] = []
        for batch in batches:
            rows = zip(batch.column("file_idx").to_pylist(), batch.column("path").to_pylist(),
                       batch.column("name").to_pylist(), strict=True)
            for file_idx, path, name in rows:
                report = ParseReport()
                for event in _events_of(path, name, settings, report):
                    pending.append(event)
                    if len(pending) >= BATCH_EVENTS:
                        yield from ev.to_arrow(pending).to_batches()
                        pending = []
                on_report(file_idx, report.to_dict())
        if pending:
            yield from ev.to_arrow(pending).to_batches()


def _events_of(path: str, name: str, settings: ParseSettings, report: ParseReport) -> Iterator[dict[str, Any]]:
    """One file's events; a file that cannot be read or recognised is reported, and the job goes on."""
    from rebalance_lab.replay.sources import SourceContext, UnknownFormatError, parse_file

    ctx = SourceContext(name=name, tz=settings.tz, cluster_id=settings.cluster_id, report=report)
    try:
        yield from parse_file(path, settings.fmt, ctx)
    except UnknownFormatError as exc:
        report.unparsable(name, "unknown format", str(exc))
    except OSError as exc:  # vanished or unreadable since the driver listed it
        report.unparsable(name, "unreadable file", str(exc))


def plan_parse_tasks(sizes: Sequence[int], parallelism: int, task_bytes: int = TASK_BYTES) -> list[list[int]]:
    """File indices per parse task: about ``task_bytes`` each, at least two tasks per core (while there are
    files), packed largest file first onto the lightest task, so the cores finish together.

    A file is never split (gzip cannot be, and the adapters keep per-file state such as a dump's
    partition header), so one file larger than the rest still bounds the phase.
    """
    if not sizes:
        return []
    wanted = max(2 * max(1, parallelism), math.ceil(sum(sizes) / task_bytes))
    bins: list[tuple[int, int, list[int]]] = [(0, i, []) for i in range(min(len(sizes), wanted))]
    for idx in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        load, number, chosen = heapq.heappop(bins)
        chosen.append(idx)
        heapq.heappush(bins, (load + sizes[idx], number, chosen))
    return [sorted(chosen) for _, _, chosen in sorted(bins, key=lambda b: (-b[0], b[1]))]


def merge_reports(by_file: dict[int, dict[str, Any]]) -> ParseReport:
    """The run's report from the per-file ones, in file order (so the samples are deterministic)."""
    total = ParseReport()
    for file_idx in sorted(by_file):
        total.merge(ParseReport.from_dict(by_file[file_idx]))
    return total


# --- replay ---------------------------------------------------------------------------------------------------------

Replay = Callable[..., dict[str, list[dict[str, Any]]]]


def replay_batches(batches: Iterable[pa.RecordBatch], topics: dict[str, list[dict[str, Any]]],
                   whatif: Sequence[str], replay: Replay | None = None) -> Iterator[pa.RecordBatch]:
    """Replay every group of a partition whose rows arrive clustered by ``(cluster_id, group_id)``.

    ``topics`` maps a cluster id to its TOPIC_METADATA events. Output rows of whole groups
    are gathered to about :data:`BATCH_ROWS` per yielded batch.
    """
    run = replay if replay is not None else _model_replay()
    with batch_gc():
        out: dict[str, list[dict[str, Any]]] = {}
        gathered = 0
        for key, group_events in _clustered(batches):
            result = _replay_one(key, group_events, topics, whatif, run)
            for name, rows in result.items():
                out.setdefault(name, []).extend(rows)
                gathered += len(rows)
            if gathered >= BATCH_ROWS:
                yield from combine(out).to_batches()
                out, gathered = {}, 0
        if gathered:
            yield from combine(out).to_batches()


def _clustered(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """((cluster_id, group_id), events) per run of equal keys; a key seen again later is an error (unclustered)."""
    key: tuple[str, str] | None = None
    current: list[dict[str, Any]] = []
    done: set[tuple[str, str]] = set()
    for batch in batches:
        for event in ev.from_arrow(_without_empty_columns(pa.Table.from_batches([batch]))):
            event_key = (event.get("cluster_id", ""), event["group_id"])
            if event_key != key:
                if key is not None:
                    done.add(key)
                    yield key, current
                if event_key in done:
                    raise ValueError(f"replay input is not clustered by group: {event_key} seen again")
                key, current = event_key, []
            current.append(event)
    if key is not None:
        yield key, current


def _replay_one(key: tuple[str, str], group_events: list[dict[str, Any]], topics: dict[str, list[dict[str, Any]]],
                whatif: Sequence[str], run: Replay) -> dict[str, list[dict[str, Any]]]:
    cluster_id, group_id = key
    try:
        result: dict[str, list[dict[str, Any]]] = run(ordered(group_events), topics.get(cluster_id, []),
                                                      whatif=tuple(whatif))
    except Exception as exc:  # one group's failure is reported, not fatal to a run over thousands
        return {ERROR_TABLE: [{"cluster_id": cluster_id, "group_id": group_id,
                               "error": f"{type(exc).__name__}: {exc}"}]}
    return result


def _without_empty_columns(table: pa.Table) -> pa.Table:
    """Columns with no value in this group skipped (from_arrow leaves nulls out anyway; most are empty)."""
    return table.select([i for i, column in enumerate(table.columns) if column.null_count < table.num_rows])


def _model_replay() -> Replay:
    from rebalance_lab.replay.model import replay_group

    return replay_group


def ordered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in a total order that does not depend on how Spark shuffled them: time, then the source's own
    sequence, then where they came from (the model sorts again by its causal rank; this only fixes the input)."""
    return sorted(events, key=lambda e: (e["ts"], e.get("seq") or 0, e.get("source_ref") or "",
                                         e.get("event_type") or ""))


def combine(result: dict[str, list[dict[str, Any]]]) -> pa.Table:
    """Rows of several tables as one :data:`OUTPUT_SCHEMA` table (each row sets one struct column).

    Each struct column is built in one ``pa.array`` call over the rows padded with None (a null
    struct): per group, that is several times cheaper than a Table per table plus concatenation.
    """
    present = [(field, result.get(field.name) or []) for field in list(OUTPUT_SCHEMA)[1:]]
    names = [field.name for field, rows in present for _ in rows]
    total = len(names)
    columns: list[pa.Array] = [pa.array(names, pa.string())]
    before = 0
    for field, rows in present:
        if rows:
            columns.append(pa.array([None] * before + rows + [None] * (total - before - len(rows)), field.type))
        else:
            columns.append(pa.nulls(total, field.type))
        before += len(rows)
    return pa.Table.from_arrays(columns, schema=OUTPUT_SCHEMA)


def split(table: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """The inverse of :func:`combine`, for tests and the single-process comparison: rows per table."""
    out: dict[str, list[dict[str, Any]]] = {}
    names = table.column("table").to_pylist()
    for name in dict.fromkeys(names):
        mask = pa.array([n == name for n in names])
        part = pa.Table.from_struct_array(table.filter(mask).column(name).combine_chunks())
        out[name] = tables.from_arrow(part)
    return out
