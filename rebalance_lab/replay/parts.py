"""Parquet part files written by the tasks themselves, and the driver's commit of them.

A Spark task of the replay writes its table rows with pyarrow instead of handing them to
the JVM (which spent more CPU turning the nested rows into Parquet than the model spent
computing them). The protocol is Hadoop's file-output committer's, for tasks whose output
is deterministic:

* a task attempt writes ``<staging>/<table>/part-<task>-<attempt>.parquet`` (through a
  ``.inprogress`` name, renamed when the file is complete) and returns, as its result
  rows, the :class:`Part` it wrote per table;
* the driver collects the results of the successful attempts (one per task: what Spark
  returns), moves those files to ``<out>/<table>/part-<task>.parquet`` and writes
  ``_SUCCESS``; every other attempt's file is removed with the staging directory.

``out`` must be a filesystem the driver and the executors share (the inputs are read by
path too), as any Spark cluster's output directory is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: Compression of every part file (Spark's default codec for Parquet).
COMPRESSION = "snappy"

#: Rows per record batch the writers are fed; a part file's row groups are this size or larger.
ROWS_PER_WRITE = 20_000

#: A task's result rows: the part files it wrote.
PARTS_SCHEMA = pa.schema([("table", pa.string()), ("path", pa.string()), ("rows", pa.int64()),
                          ("task", pa.int32())])


@dataclass(frozen=True)
class Part:
    table: str
    path: str
    rows: int
    task: int


class PartWriter:
    """One task attempt's part files: one per table it writes rows to, opened on the first rows."""

    def __init__(self, staging: str | Path, task: int, attempt: int = 0) -> None:
        self.staging = Path(staging)
        self.task, self.attempt = task, attempt
        self._writers: dict[str, tuple[pq.ParquetWriter, Path, list[int]]] = {}

    def write(self, table: str, data: pa.Table) -> None:
        """Append ``data`` (the table's exact schema) to this attempt's part file of ``table``."""
        if data.num_rows == 0:
            return
        if table not in self._writers:
            directory = self.staging / table
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"part-{self.task:05d}-{self.attempt}.parquet"
            writer = pq.ParquetWriter(f"{path}.inprogress", data.schema, compression=COMPRESSION)
            self._writers[table] = (writer, path, [0])
        writer, _, rows = self._writers[table]
        writer.write_table(data, row_group_size=max(ROWS_PER_WRITE, data.num_rows))
        rows[0] += data.num_rows

    def close(self) -> list[Part]:
        """Finish every file (renamed from ``.inprogress``) and say what was written."""
        parts = []
        for table, (writer, path, rows) in sorted(self._writers.items()):
            writer.close()
            os.replace(f"{path}.inprogress", path)
            parts.append(Part(table, str(path), rows[0], self.task))
        self._writers.clear()
        return parts

    def abort(self) -> None:
        """Close and remove what this attempt had started (a failing task leaves no file behind)."""
        for writer, path, _ in self._writers.values():
            writer.close()
            Path(f"{path}.inprogress").unlink(missing_ok=True)
        self._writers.clear()


def parts_batch(parts: Iterable[Part]) -> pa.RecordBatch:
    rows = [p.__dict__ for p in parts]
    return pa.RecordBatch.from_pylist(rows, schema=PARTS_SCHEMA)


def parts_of(table: pa.Table | pa.RecordBatch) -> list[Part]:
    return [Part(**row) for row in table.to_pylist()]


def commit(out: str | Path, parts: Iterable[Part], schemas: Mapping[str, pa.Schema]) -> dict[str, int]:
    """Move the successful attempts' files to ``out/<table>/``; rows written per table of ``schemas``.

    Each table's directory is replaced (as Spark's overwrite mode does); a table no task wrote
    to gets one empty part file with its schema, so every table reads back the same way.
    Raises ValueError if two parts claim the same task of a table (the caller collected wrongly).
    """
    out = Path(out)
    chosen: dict[str, dict[int, Part]] = {name: {} for name in schemas}
    for part in parts:
        if part.task in chosen[part.table]:
            raise ValueError(f"two part files for task {part.task} of {part.table}")
        chosen[part.table][part.task] = part
    counts = {}
    for name, schema in schemas.items():
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for task, part in sorted(chosen[name].items()):
            os.replace(part.path, target / f"part-{task:05d}.parquet")
        if not chosen[name]:
            pq.write_table(schema.empty_table(), target / "part-00000.parquet", compression=COMPRESSION)
        (target / "_SUCCESS").touch()
        counts[name] = sum(p.rows for p in chosen[name].values())
    return counts
