"""What one Spark task does, as pure functions over Arrow: no pyspark here, so they are tested without Spark.

* :func:`parse_files` parses the input files named in its rows, writes their canonical
  events as this task's part of the ``events`` table (:mod:`~rebalance_lab.replay.parts`),
  leaves the ``TOPIC_METADATA`` events it found beside it (:func:`write_topics`) and
  yields :data:`PARSED_SCHEMA` rows: one per group it saw, carrying that group's events
  packed (:func:`pack_events`: pickled, then LZ4-compressed), and one per part file it
  wrote. The shuffle that brings a group's rows together moves these few opaque rows (a
  group's events from each parse task that saw it) instead of a million rows of nested
  columns the JVM would convert twice. Each file's
  :class:`~rebalance_lab.replay.diagnostics.ParseReport` goes to a callback (the Spark
  pipeline sends it to the driver in an accumulator).
* :func:`replay_groups` replays the groups of one partition (a group's rows, one per parse task
  that saw it, arrive in any order: the task gathers each group's packed rows, which are small,
  and replays the groups in key order), writes
  every derived table's rows as this task's part files and yields the parts it wrote, and
  the parse tasks' part rows that reached it. Every replay task reads every cluster's
  topics with :func:`read_topics` (the parse tasks have all finished by then: a shuffle
  stands between the two).
"""

from __future__ import annotations

import heapq
import math
import os
import pickle
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.gcpolicy import batch_gc
from rebalance_lab.replay.member_rows import Compactor, tuple_members
from rebalance_lab.replay.parts import PARTS_SCHEMA, Part, PartWriter, parts_batch, parts_of
from rebalance_lab.replay.timeline import sort_key

#: Events a parse task converts to Arrow and writes at a time.
BATCH_EVENTS = 20_000

#: Input bytes a parse task aims at (Spark's own split size for files is 128 MB). Each task costs the local JVM
#: ~40 ms of CPU besides its rows (launching the Python runner, converting the batches, a shuffle file segment per
#: replay partition) and its Python worker ~10 ms: with 32 MB a 1e6-event input (953 MB) made 29 parse tasks, and
#: forcing those counts on a 1e5-event input cost 3 JVM CPU-s more than 8 tasks did (issue 20; FIDELITY.md).
#: A task of 128 MB holds its events (~150,000, a few hundred MB) until it packs them by group.
TASK_BYTES = 128 * 2**20

#: Rows of a derived table a replay task gathers (over whole groups) before writing them.
BATCH_ROWS = 20_000

#: The codec of packed events: LZ4 shrinks the pickles about 5x at ~0.7 GB/s, so the JVM, which copies each
#: group's blob through Arrow, its cache, the shuffle and the sort, holds and moves a fifth of the bytes. (Its CPU
#: did not fall measurably on a 270k-event run; the gain is memory and shuffle volume.)
PACK_CODEC = "lz4"
_PACK_HEADER = struct.Struct("<Q")  # the pickle's length, which decompression needs

#: The input of a parse task: one row per file.
FILES_SCHEMA = pa.schema([("file_idx", pa.int32()), ("path", pa.string()), ("name", pa.string())])

#: What a parse task yields: a group's packed events, or (``events`` null) a part file of the events table it wrote.
PARSED_SCHEMA = pa.schema([("cluster_id", pa.string()), ("group_id", pa.string()), ("events", pa.binary()),
                           *PARTS_SCHEMA])

#: A group whose replay raised: the run goes on, the error is reported.
ERROR = pa.struct([("cluster_id", pa.string()), ("group_id", pa.string()), ("error", pa.string())])
ERROR_TABLE = "replay_errors"
ERROR_SCHEMA = pa.schema(list(ERROR))

#: Every table a replay task may write, with its schema.
OUTPUT_TABLES: dict[str, pa.Schema] = {**tables.TABLES, ERROR_TABLE: ERROR_SCHEMA}

EVENTS_TABLE = "events"

#: Where, below a parse task's staging directory, it leaves its TOPIC_METADATA events (packed).
TOPICS_DIR = "topics"
_TOPICS_FILE = re.compile(r"part-(\d+)-(\d+)\.events")

ReportSink = Callable[[int, dict[str, Any]], None]
GroupKey = tuple[str, "str | None"]


@dataclass(frozen=True)
class ParseSettings:
    fmt: str = "auto"
    tz: str = "UTC"
    cluster_id: str = "default"


# --- parse ----------------------------------------------------------------------------------------------------------

def parse_files(batches: Iterable[pa.RecordBatch], settings: ParseSettings, on_report: ReportSink,
                writer: PartWriter) -> Iterator[pa.RecordBatch]:
    """The events of every file named in ``batches`` (:data:`FILES_SCHEMA` rows) as :data:`PARSED_SCHEMA` rows."""
    with batch_gc():
        by_group: dict[GroupKey, list[dict[str, Any]]] = {}
        pending: list[dict[str, Any]] = []
        try:
            for batch in batches:
                rows = zip(batch.column("file_idx").to_pylist(), batch.column("path").to_pylist(),
                           batch.column("name").to_pylist(), strict=True)
                for file_idx, path, name in rows:
                    report = ParseReport()
                    compactor = Compactor()  # members as tuples for Arrow and the shuffle (member_rows)
                    for parsed in _events_of(path, name, settings, report):
                        event = compactor.event(parsed)
                        pending.append(event)
                        key = _key(event)
                        if key is not None:
                            by_group.setdefault(key, []).append(event)
                        if len(pending) >= BATCH_EVENTS:
                            writer.write(EVENTS_TABLE, ev.to_arrow(tuple_members(pending)))
                            pending = []
                    on_report(file_idx, report.to_dict())
            writer.write(EVENTS_TABLE, ev.to_arrow(tuple_members(pending)))
            topic_keys = [key for key in by_group if key[1] is None]  # (cluster, None): its TOPIC_METADATA
            write_topics(writer, [event for key in topic_keys for event in by_group.pop(key)])
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        yield from _group_batches(by_group)
        yield _as_parsed(written)


def _key(event: dict[str, Any]) -> GroupKey | None:
    """Where an event goes: its group, its cluster's topics (TOPIC_METADATA), or only to the events table."""
    if event["event_type"] == "TOPIC_METADATA":
        return event.get("cluster_id") or "", None
    group = event.get("group_id")
    return None if group is None else (event.get("cluster_id") or "", group)


def _group_batches(by_group: dict[GroupKey, list[dict[str, Any]]]) -> Iterator[pa.RecordBatch]:
    keys = list(by_group)
    for start in range(0, len(keys), 1_000):
        chunk = keys[start:start + 1_000]
        yield pa.RecordBatch.from_arrays([
            pa.array([c for c, _ in chunk], pa.string()),
            pa.array([g for _, g in chunk], pa.string()),
            pa.array([pack_events(by_group[k]) for k in chunk], pa.binary()),
            *[pa.nulls(len(chunk), f.type) for f in PARTS_SCHEMA],
        ], schema=PARSED_SCHEMA)


def _as_parsed(parts: list[Part]) -> pa.RecordBatch:
    batch = parts_batch(parts)
    n = batch.num_rows
    return pa.RecordBatch.from_arrays([pa.nulls(n, pa.string()), pa.nulls(n, pa.string()), pa.nulls(n, pa.binary()),
                                       *batch.columns], schema=PARSED_SCHEMA)


def pack_events(events: list[dict[str, Any]]) -> bytes:
    """Events as one opaque value for the shuffle: their pickle's length, then the pickle LZ4-compressed."""
    raw = pickle.dumps(events, protocol=pickle.HIGHEST_PROTOCOL)
    packed: bytes = pa.compress(raw, codec=PACK_CODEC, asbytes=True)
    return _PACK_HEADER.pack(len(raw)) + packed


def unpack_events(blob: bytes) -> list[dict[str, Any]]:
    """The events :func:`pack_events` packed."""
    (size,) = _PACK_HEADER.unpack_from(blob)
    raw = pa.decompress(memoryview(blob)[_PACK_HEADER.size:], decompressed_size=size, codec=PACK_CODEC)
    events: list[dict[str, Any]] = pickle.loads(raw)
    return events


def write_topics(writer: PartWriter, events: list[dict[str, Any]]) -> None:
    """Leave this task attempt's TOPIC_METADATA events in ``<staging>/topics/`` (none: no file), complete or not at all.

    They go beside the part files instead of through the shuffle because every replay task needs
    all of them, and a shuffle sends each row to one partition. A file is never committed: the
    staging directory, and the file with it, goes when the run ends.
    """
    if not events:
        return
    directory = writer.staging / TOPICS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"part-{writer.task:05d}-{writer.attempt}.events"
    Path(f"{path}.inprogress").write_bytes(pack_events(events))
    os.replace(f"{path}.inprogress", path)


def read_topics(staging: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's TOPIC_METADATA events (in time order) that the parse tasks of ``staging`` left.

    Parsing is deterministic, so a task's attempts left the same events: one file per task is read.
    """
    directory = Path(staging) / TOPICS_DIR
    chosen: dict[int, tuple[int, Path]] = {}
    for path in sorted(directory.iterdir()) if directory.is_dir() else ():
        match = _TOPICS_FILE.fullmatch(path.name)
        if match is not None:
            task, attempt = int(match[1]), int(match[2])
            if task not in chosen or attempt < chosen[task][0]:
                chosen[task] = (attempt, path)
    found = [e for _, (_, path) in sorted(chosen.items()) for e in unpack_events(path.read_bytes())]
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for event in sorted(found, key=sort_key):
        by_cluster.setdefault(event.get("cluster_id") or "", []).append(event)
    return by_cluster


def _events_of(path: str, name: str, settings: ParseSettings, report: ParseReport) -> Iterator[dict[str, Any]]:
    """One file's events; a file that cannot be read or recognised is reported, and the job goes on."""
    from rebalance_lab.replay.sources import SourceContext, UnknownFormatError, parse_file

    ctx = SourceContext(name=name, tz=settings.tz, cluster_id=settings.cluster_id, report=report,
                        compact_members=True)  # member rows as the Compactor would make them
    try:
        yield from parse_file(path, settings.fmt, ctx)
    except UnknownFormatError as exc:
        report.unparsable(name, "unknown format", str(exc))
    except OSError as exc:  # vanished or unreadable since the driver listed it
        report.unparsable(name, "unreadable file", str(exc))


def plan_parse_tasks(sizes: Sequence[int], parallelism: int, task_bytes: int | None = None) -> list[list[int]]:
    """File indices per parse task: about ``task_bytes`` each, at least two tasks per core (while there are
    files), packed largest file first onto the lightest task, so the cores finish together.

    A file is never split (gzip cannot be, and the adapters keep per-file state such as a dump's
    partition header), so one file larger than the rest still bounds the phase.
    """
    if not sizes:
        return []
    wanted = max(2 * max(1, parallelism), math.ceil(sum(sizes) / (task_bytes or TASK_BYTES)))
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

Replay = Callable[..., dict[str, Sequence[dict[str, Any]]]]
Rows = list[dict[str, Any]] | tables.TupleRows


def replay_groups(batches: Iterable[pa.RecordBatch], topics: dict[str, list[dict[str, Any]]],
                  whatif: Sequence[str], writer: PartWriter, replay: Replay | None = None) -> Iterator[pa.RecordBatch]:
    """Replay every group of a partition's :data:`PARSED_SCHEMA` rows, in ``(cluster_id, group_id)`` order,
    write the rows of every table, and yield the parts written.

    The rows are gathered per group here rather than sorted by the JVM (``sortWithinPartitions``): they are
    one packed blob per group and parse task, a small fraction of the partition's input bytes, and the sort
    made the JVM copy every blob once more into its sort pages before handing it to Python.

    ``topics`` maps a cluster id to its TOPIC_METADATA events. A table's rows are written
    once about :data:`BATCH_ROWS` of them (of whole groups) are gathered. Part rows among
    the input (a parse task's, whose ``path`` is set) are passed on with the parts written.
    """
    run = replay if replay is not None else _model_replay()
    with batch_gc():
        out: dict[str, Rows] = {}
        carried: list[Part] = []
        try:
            for key, group_events in _grouped(batches, carried):
                for name, rows in _replay_one(key, group_events, topics, whatif, run).items():
                    gathered = out.get(name)
                    if gathered is None:
                        gathered = out[name] = _empty_like(rows)
                    gathered.extend(rows)
                    if len(gathered) >= BATCH_ROWS:
                        writer.write(name, _to_arrow(name, gathered))
                        out[name] = _empty_like(rows)
            for name, rows in out.items():
                writer.write(name, _to_arrow(name, rows))
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
    yield parts_batch([*carried, *written])


def _empty_like(rows: Sequence[dict[str, Any]]) -> Rows:
    """Where to gather a table's rows: tuples stay tuples (see :mod:`.rows`)."""
    return rows.empty() if isinstance(rows, tables.TupleRows) else []


def _to_arrow(name: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    if name == ERROR_TABLE:
        return pa.Table.from_pylist(rows, schema=ERROR_SCHEMA)
    if name == "group_generations":  # snapshots' members arrive as tuples, the fold's own as dicts: one form
        rows = tuple_members(rows)
    return tables.to_arrow(name, rows)


def _grouped(batches: Iterable[pa.RecordBatch], carried: list[Part]
             ) -> Iterator[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """((cluster_id, group_id), events) per group, in key order, each group's packed rows unpacked only when its
    turn comes (so one group's events are in memory at a time). Part rows (``path`` set) go to ``carried``."""
    packed: dict[tuple[str, str], list[bytes]] = {}
    for batch in batches:
        if batch.column("path").null_count < batch.num_rows:
            carried.extend(parts_of(batch.filter(pc.is_valid(batch.column("path"))).select(PARTS_SCHEMA.names)))
        rows = zip(batch.column("cluster_id").to_pylist(), batch.column("group_id").to_pylist(),
                   batch.column("events").to_pylist(), strict=True)
        for cluster, group, blob in rows:
            if group is not None and blob is not None:
                packed.setdefault((cluster or "", group), []).append(blob)
    for key in sorted(packed):
        # The blobs in an order of their own (their bytes), not the shuffle's: the model's input list is then the
        # same in every run. The events are not sorted here: the model's fold sorts them by a total key
        # (timeline.sort_key, whatever their input order), and a second sort here cost ~0.6 CPU-s per 1e6 events.
        blobs = sorted(packed.pop(key))
        yield key, [event for blob in blobs for event in unpack_events(blob)]


def _replay_one(key: tuple[str, str], group_events: list[dict[str, Any]], topics: dict[str, list[dict[str, Any]]],
                whatif: Sequence[str], run: Replay) -> dict[str, Sequence[dict[str, Any]]]:
    cluster_id, group_id = key
    try:
        result = run(group_events, topics.get(cluster_id, []), whatif=tuple(whatif))
    except Exception as exc:  # one group's failure is reported, not fatal to a run over thousands
        return {ERROR_TABLE: [{"cluster_id": cluster_id, "group_id": group_id,
                               "error": f"{type(exc).__name__}: {exc}"}]}
    return result


def _model_replay() -> Replay:
    from rebalance_lab.replay.model import replay_group

    return replay_group

