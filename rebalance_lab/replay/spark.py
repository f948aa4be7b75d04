"""The replay on Apache Spark: with :mod:`.spark_daemon` (the executors' Python daemon), the only module of the
package that imports ``pyspark`` (spec §6).

:func:`build_session` starts a session that keeps to loopback when the master is
local, runs Python workers with this interpreter (spec §6.1, the ``PYSPARK_PYTHON``
gotcha) and stays quiet. :func:`run_spark` is the pipeline:

1. **parse + replay**, one Spark job of two stages, so that the JVM never holds the parsed input
   and the parse's last tasks overlap nothing idle:

   * input files packed into tasks of about equal bytes (:func:`tasks.plan_parse_tasks`;
     ``mapInArrow`` over a range of the task numbers) call :func:`sources.parse_file`; each task
     writes its canonical events as its part of ``out/events/`` with pyarrow, leaves its
     TOPIC_METADATA events beside them, and yields one row per group it saw, the group's events
     packed (pickled, LZ4), and its part rows. Each task's ParseReport comes back in an
     accumulator keyed by file index, so a re-run task replaces its entry instead of counting twice;
   * those rows repartitioned by (cluster_id, group_id); ``mapInArrow`` gathers each group's rows
     (no JVM sort), reads every cluster's topics (all the parse tasks
     have finished: the shuffle stands between), replays each group once with the pure model and
     writes every derived table's rows as its part files; the parse's part rows pass through;
2. **commit**: the part files of the successful task attempts become ``out/<table>/``
   (:mod:`rebalance_lab.replay.parts`: the JVM never converts the nested rows);
3. **collect** + **report**: what the report needs (all summaries and episodes, the
   busiest groups' generations, moves and what-ifs) is read back with pyarrow.

The per-task work itself lives in :mod:`rebalance_lab.replay.tasks` (pure Arrow).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import SparkContext, TaskContext
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import jvm_cds, parts, tables, tasks
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.gcpolicy import batch_gc
from rebalance_lab.replay.inputs import expand_inputs
from rebalance_lab.replay.progress import Phases

APP_NAME = "rebalance-lab replay"
#: HotSpot's JIT for a local-mode JVM: the quick C1 compiler only (see _launch_settings).
LOCAL_JIT = "-XX:TieredStopAtLevel=1"
LOOPBACK = "127.0.0.1"
#: The executors' Python daemon (``spark.python.daemon.module``).
DAEMON_MODULE = "rebalance_lab.replay.spark_daemon"

#: Groups whose generations, moves and what-ifs go to the report in full (the busiest, by episodes).
BUSY_GROUPS = 20
#: Nested columns the report does not read, left in the Parquet only.
_REPORT_DROPS = {"group_generations": ("members",), "whatif_results": ("assignment",)}
#: Input bytes per replay partition aimed at (about 150,000 events of broker logs and offsets dumps; the events
#: are not counted before the replay's partitions are chosen); at least two partitions per core. A partition holds
#: only its groups' packed events (about a twelfth of its input bytes), one group unpacked at a time. Every replay
#: partition is a task and a shuffle segment of every parse task, whose cost in the JVM grows with parse tasks x
#: partitions: 20 MB made 46 partitions of a 1e6-event input (953 MB, 1,334 segments; issue 20, FIDELITY.md).
#: Hash-partitioned thousands of groups stay even: a partition of 1,000 groups is within a few % of the others.
BYTES_PER_PARTITION = 128 * 2**20
MIN_BYTES_PER_PARTITION = 2 * 2**20

# Root at WARN, the level Spark's shell logic expects (any other makes it print "Setting default log level"),
# with the start-up warnings of a laptop run silenced; build_session lowers it to ERROR once started.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""


# --- the session ----------------------------------------------------------------------------------------------------

def is_loopback_master(master: str) -> bool:
    """local[...] runs in this process; a standalone master on loopback keeps its workers there too."""
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname
    return host in ("127.0.0.1", "localhost", "::1")


def build_session(master: str | None = "local[*]", *, shuffle_partitions: int | None = None,
                  app_name: str = APP_NAME, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession for the replay. ``master=None`` takes the master spark-submit was given (spec §6.6).

    Session zone UTC, UI and console progress bar off, log level ERROR (also while the
    JVM starts), Parquet timestamps as microseconds. When we launch the driver
    ourselves (``master`` given) Python workers run this interpreter, and a local or
    loopback master binds the driver to 127.0.0.1. ``conf`` overrides any of these.
    """
    settings: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Without this Spark measures the Arrow batch it is filling after every row it adds, and for the
        # events' nested lists that walks the whole batch each time: 87 s instead of 38 s to hand 1M events to
        # the replay's Python tasks. Batches stay bounded by maxRecordsPerBatch (10,000 rows).
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    }
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
        settings.update(_launch_settings(master))
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
        settings["spark.default.parallelism"] = str(shuffle_partitions)
    settings.update(conf or {})
    if master is not None:
        # The executors' interpreter: ours unless the caller named one (e.g. a packed venv on a cluster).
        os.environ["PYSPARK_PYTHON"] = settings.setdefault("spark.pyspark.python", sys.executable)
    cds = _class_sharing(master, settings, conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception:
        if cds.archive is None:
            raise
        jvm_cds.discard(cds.archive)  # a damaged archive kills the JVM as it starts: start again without
        options = settings["spark.driver.extraJavaOptions"].replace(cds.options, "").strip()
        spark = builder.config("spark.driver.extraJavaOptions", options).getOrCreate()
    jvm = getattr(SparkContext._gateway, "proc", None)
    if cds.part is not None and jvm is not None:
        jvm_cds.record_writer(cds.part, jvm.pid)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _class_sharing(master: str | None, settings: dict[str, str], conf: Mapping[str, str]) -> jvm_cds.CdsPlan:
    """Adds a local driver's AppCDS options (:mod:`.jvm_cds`) to ``settings`` when this call launches the JVM."""
    if (master is None or not master.startswith("local") or SparkContext._gateway is not None
            or "PYSPARK_GATEWAY_PORT" in os.environ  # a JVM launched by someone else (spark-submit)
            or "spark.driver.extraJavaOptions" in conf or not jvm_cds.enabled()):
        return jvm_cds.CdsPlan("")
    cds = jvm_cds.plan(class_archive())
    if cds.options:
        settings["spark.driver.extraJavaOptions"] += f" {cds.options}"
    return cds


def class_archive() -> Path:
    """The AppCDS archive of this JVM and these Spark jars."""
    import pyspark

    depends_on = "|".join((os.environ.get("JAVA_HOME", ""), shutil.which("java") or "", pyspark.__file__ or "",
                           pyspark.__version__))
    return jvm_cds.archive_path(jvm_cds.default_directory(), depends_on)


def _launch_settings(master: str) -> dict[str, str]:
    log_config = f"-Dlog4j2.configurationFile={_log4j2_file().as_uri()}"
    settings = {"spark.driver.extraJavaOptions": log_config, "spark.executor.extraJavaOptions": log_config,
                # PySpark's daemon with the replay's modules imported before it forks its workers (see there).
                "spark.python.daemon.module": DAEMON_MODULE}
    if master.startswith("local"):
        # In local mode the driver JVM is the executor too: Spark's default 1g heap spends its time in GC.
        settings["spark.driver.memory"] = _local_driver_memory()
        # ... and it lives for one replay, where its own work is small (the tasks are Python): most of its CPU went
        # to the C2 JIT compiler (12 of 16 CPU-s on a 270k-event run, competing with the Python workers for the
        # cores). Compiling with C1 only took the JVM from 11.7 to 4.8 CPU-s on that run.
        settings["spark.driver.extraJavaOptions"] += f" {LOCAL_JIT}"
    if is_loopback_master(master):
        # Without these the driver advertises the machine's address (spec §6.2).
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        settings["spark.driver.bindAddress"] = LOOPBACK
        settings["spark.driver.host"] = LOOPBACK
    return settings


def _local_driver_memory() -> str:
    """A quarter of the machine's memory, between 1 and 8 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{max(1, min(8, total // 4 // 2**30))}g"


def _log4j2_file() -> Path:
    """A log4j2 configuration at ERROR, so the JVM's start-up warnings stay off the terminal."""
    path = Path(tempfile.gettempdir()) / f"rebalance-lab-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.write_text(_LOG4J2)
    return path


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow one (``timestamp[us, UTC]`` becomes TimestampType in the UTC session)."""
    result: StructType = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    return result


EVENTS_SPARK_SCHEMA = spark_schema(ev.ARROW_SCHEMA)
PARSED_SPARK_SCHEMA = spark_schema(tasks.PARSED_SCHEMA)
PARTS_SPARK_SCHEMA = spark_schema(parts.PARTS_SCHEMA)


# --- what runs in the tasks ------------------------------------------------------------------------------------------

class _ReportsParam(AccumulatorParam[dict[int, dict[str, Any]]]):
    """Per-file ParseReports (as dicts) keyed by file index: merging is a dict update, so it is idempotent."""

    def zero(self, value: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
        return {}

    def addInPlace(self, value1: dict[int, dict[str, Any]],
                   value2: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
        value1.update(value2)
        return value1


def _writer(staging: str) -> parts.PartWriter:
    """This task attempt's part writer (the partition is the task; the attempt number keeps retries apart)."""
    context = TaskContext.get()
    if context is None:  # not in a Spark task: only in tests of these callables
        return parts.PartWriter(staging, 0, 0)
    return parts.PartWriter(staging, context.partitionId(), context.attemptNumber())


@dataclass(frozen=True)
class _ParseTask:
    """What mapInArrow runs per parse task: its rows are bin numbers (``spark.range``), ``bins`` the files of each."""

    settings: tasks.ParseSettings
    reports: Any  # pyspark Accumulator[dict[int, dict]]; pickled into the task, added to on the executor
    staging: str
    bins: list[list[tuple[int, str, str]]]  # (file index, path, name) per bin

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def send(file_idx: int, report: dict[str, Any]) -> None:
            self.reports.add({file_idx: report})

        yield from tasks.parse_files(self._files(batches), self.settings, send, _writer(self.staging))

    def _files(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [row for number in batch.column("id").to_pylist() for row in self.bins[number]]
            yield pa.RecordBatch.from_pylist([dict(zip(tasks.FILES_SCHEMA.names, row, strict=True)) for row in rows],
                                             schema=tasks.FILES_SCHEMA)


@dataclass(frozen=True)
class _ReplayTask:
    """What mapInArrow runs per replay partition: every group in it, gathered by :func:`tasks.replay_groups`."""

    parse_staging: str  # where the parse tasks left their topics
    whatif: tuple[str, ...]
    staging: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topics = tasks.read_topics(self.parse_staging)
        yield from tasks.replay_groups(batches, topics, self.whatif, _writer(self.staging))


def _to_json_lines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Canonical JSONL rows (events.to_json, ISO times, nulls left out) from event batches."""
    for batch in batches:
        lines = [ev.to_json(event) for event in ev.from_arrow(pa.Table.from_batches([batch]))]
        yield pa.RecordBatch.from_arrays([pa.array(lines, pa.string())], names=["value"])


# --- the pipeline ---------------------------------------------------------------------------------------------------

@dataclass
class SparkResult:
    out_dir: Path
    parse_report: ParseReport
    rows: dict[str, int]  # rows written per table
    phases: dict[str, float]  # seconds per phase, in order
    meta: dict[str, Any]
    errors: list[dict[str, Any]] = field(default_factory=list)  # groups whose replay raised
    report_path: Path | None = None
    summary: str = ""


@dataclass
class _Run:
    spark: SparkSession
    out: Path
    phases: Phases
    staging: Path = field(default_factory=Path)  # where task attempts write their part files

    def __post_init__(self) -> None:
        self.staging = self.out / "_temporary" / uuid.uuid4().hex

    @property
    def sc(self) -> Any:
        return self.spark.sparkContext

    def path(self, name: str) -> str:
        return str(self.out / name)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        with self.phases.phase(name):
            self.sc.setJobGroup(name, f"{APP_NAME}: {name}")
            try:
                yield
            finally:
                self.sc.setLocalProperty("spark.jobGroup.id", None)


def run_spark(spark: SparkSession, inputs: Sequence[str], *, fmt: str = "auto", tz: str = "UTC",
              cluster_id: str = "default", whatif: Sequence[str] = (), out_dir: Path,
              progress: TextIO | None = None, events_jsonl: bool = False, report: bool = True) -> SparkResult:
    """Parse ``inputs``, replay every group, write ``out_dir/<table>/`` Parquet and (``report``) the report.

    ``progress`` is where the phase/task progress line goes (stderr in the CLI; None for none).
    """
    files = expand_inputs(inputs)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = tasks.ParseSettings(fmt=fmt, tz=tz, cluster_id=cluster_id)
    phases = Phases(progress, task_counts=lambda name: task_counts(spark, name))
    run = _Run(spark, out, phases)
    with phases:
        try:
            rows, parse_report, partitions = _parse_and_replay(run, files, settings, tuple(whatif), events_jsonl)
        finally:
            shutil.rmtree(run.staging, ignore_errors=True)
            with suppress(OSError):
                run.staging.parent.rmdir()  # unless another run is writing to the same directory
        # The driver reads back every group's summary, episodes, generations and what-ifs (~0.5 M row dicts at
        # 1e6 events) and builds the report from them with the cyclic collector off, as the local engine does
        # (gcpolicy): with it on, 1.6 of the read-back's 6.0 CPU-s and 1.2 of the report's 8.9 were collections.
        with batch_gc():
            with run.phase("collect"):
                # Without a report, only the (small) errors table is read back.
                collected, errors = _collect(run) if report else ({name: [] for name in _COLLECTED}, _errors(run))
            meta = _meta(run, inputs, files, settings, whatif, partitions, rows, parse_report, collected)
            meta["errors"] = errors
            outcome = SparkResult(out, parse_report, rows, phases.durations(), meta, errors)
            shown: Any = None  # the report's summary of the collected rows, made once for the page and the terminal
            if report:
                with run.phase("report"):
                    outcome.report_path, shown = _write_report(outcome, collected)
    outcome.phases = phases.durations()
    if report:
        outcome.meta["timings"] = dict(outcome.phases)
        with batch_gc():
            outcome.summary = _summary(outcome, collected, shown)
    return outcome


def _parse_and_replay(run: _Run, files: list[str], settings: tasks.ParseSettings, whatif: tuple[str, ...],
                      events_jsonl: bool) -> tuple[dict[str, int], ParseReport, int]:
    """(rows per committed table, the parse report, replay partitions)."""
    reports = run.sc.accumulator({}, _ReportsParam())
    sizes = [_size(path) for path in files]
    partitions = replay_partitions(sum(sizes), run.sc.defaultParallelism)
    with run.phase("parse+replay"):
        written = _replay(run, _parse(run, files, sizes, settings, reports), whatif, partitions)
    parse_report = tasks.merge_reports(reports.value)
    with run.phase("commit"):
        rows = parts.commit(run.out, written, {tasks.EVENTS_TABLE: ev.ARROW_SCHEMA, **tasks.OUTPUT_TABLES})
        del rows[tasks.EVENTS_TABLE]  # the parse report counts the events
    if events_jsonl:
        with run.phase("events-jsonl"):
            _write_events_jsonl(run)
    return rows, parse_report, partitions


def task_counts(spark: SparkSession, group: str) -> tuple[int, int]:
    """Completed and total tasks of the running stages of job group ``group`` (for the progress line)."""
    tracker = spark.sparkContext.statusTracker()
    active = set(tracker.getActiveStageIds())
    completed = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job is not None else ()):
            stage = tracker.getStageInfo(stage_id) if stage_id in active else None
            if stage is not None:
                completed += stage.numCompletedTasks
                total += stage.numTasks
    return completed, total


def replay_partitions(input_bytes: int, parallelism: int) -> int:
    """Shuffle partitions for the replay: a few per core, more for big inputs, fewer for tiny ones."""
    wanted = max(2 * parallelism, math.ceil(input_bytes / BYTES_PER_PARTITION))
    return max(1, min(wanted, math.ceil(input_bytes / MIN_BYTES_PER_PARTITION)))


def _display_name(path: str) -> str:
    """The file's name in ``source_ref``: relative to the working directory when below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _parse(run: _Run, files: list[str], sizes: list[int], settings: tasks.ParseSettings,
           reports: Any) -> DataFrame:
    """The parse's rows (:data:`tasks.PARSED_SCHEMA`), to be computed by the job that reads them."""
    bins = [[(idx, files[idx], _display_name(files[idx])) for idx in chosen]
            for chosen in tasks.plan_parse_tasks(sizes, run.sc.defaultParallelism)]
    # One Spark partition per bin: a range of the bin numbers split into as many partitions holds one number in
    # each, and the task reads its bin's files from the list it was given. (Flattening a parallelized list of
    # bins did the same through a Python RDD, whose own daemon and workers cost 2 CPU-s of start-up.)
    numbers = run.spark.range(0, len(bins), 1, max(1, len(bins)))
    return numbers.mapInArrow(_ParseTask(settings, reports, _parse_staging(run), bins), PARSED_SPARK_SCHEMA)


def _parse_staging(run: _Run) -> str:
    return str(run.staging / "parse")


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # the parse task reports it
        return 0


def _events(run: _Run) -> DataFrame:
    return run.spark.read.schema(EVENTS_SPARK_SCHEMA).parquet(run.path("events"))


def _write_events_jsonl(run: _Run) -> None:
    lines = _events(run).mapInArrow(_to_json_lines, "value string")
    lines.write.mode("overwrite").text(run.path("events_jsonl"))


def _replay(run: _Run, parsed: DataFrame, whatif: tuple[str, ...], partitions: int) -> list[parts.Part]:
    """Every group replayed once; the part files of every table the parse and the replay wrote."""
    # Partition by group: one Python call per partition gathers each group's rows and replays its groups in
    # turn (a groupBy().applyInArrow call per group costs the JVM milliseconds of Arrow set-up, which dominated
    # the run for 10,000 small groups; a sortWithinPartitions to make each group's rows contiguous copied every
    # blob once more in the JVM). The parse's part rows (no group) go to one partition, whose task passes them on.
    by_group = parsed.repartition(partitions, "cluster_id", "group_id")
    task = _ReplayTask(_parse_staging(run), whatif, str(run.staging / "replay"))
    return parts.parts_of(by_group.mapInArrow(task, PARTS_SPARK_SCHEMA).toArrow())


def _read_table(run: _Run, name: str, drop: Sequence[str] = (),
                filters: list[tuple[str, str, Any]] | None = None) -> list[dict[str, Any]]:
    """Rows of a table this run wrote, read back with pyarrow: the output directory is the driver's (the report
    is written there too), and pyarrow reads only the columns asked for, far cheaper than a Spark collect."""
    path = run.out / name
    schema = tables.TABLES.get(name, pa.schema(list(tasks.ERROR)))
    columns = [f.name for f in schema if f.name not in drop]
    if not any(path.glob("*.parquet")):
        return []
    return tables.from_arrow(pq.read_table(path, columns=columns, filters=filters, schema=schema))


_COLLECTED = ("group_summary", "rebalance_episodes", "group_generations", "whatif_results", "partition_moves")


def _errors(run: _Run) -> list[dict[str, Any]]:
    return _read_table(run, tasks.ERROR_TABLE)


def _collect(run: _Run) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """What the report reads: every group's summary, episodes, generations and what-ifs (without the nested
    member and assignment lists, which it does not draw), and the partition moves of the busiest groups."""
    collected = {name: _read_table(run, name, _REPORT_DROPS.get(name, ())) for name in _COLLECTED[:-1]}
    busy = sorted(collected["group_summary"],
                  key=lambda r: (-(r.get("episodes") or 0), r["cluster_id"], r["group_id"]))[:BUSY_GROUPS]
    busy_keys = {(r["cluster_id"], r["group_id"]) for r in busy}
    # An empty "in" list makes pyarrow fail (ArrowTypeError: string vs null): a run without groups reads no moves.
    moves = _read_table(run, "partition_moves", filters=[("group_id", "in", sorted({g for _, g in busy_keys}))]
                        ) if busy_keys else []
    collected["partition_moves"] = [r for r in moves if (r["cluster_id"], r["group_id"]) in busy_keys]
    return collected, _errors(run)


def _meta(run: _Run, inputs: Sequence[str], files: list[str], settings: tasks.ParseSettings,
          whatif: Sequence[str], partitions: int, rows: dict[str, int], parse_report: ParseReport,
          collected: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The run described for the report (the keys :mod:`rebalance_lab.replay.report` reads, and more)."""
    timings = run.phases.durations()
    busy = sorted({(r["cluster_id"], r["group_id"]) for r in collected["partition_moves"]})
    return {
        "runner": "spark",
        "master": run.sc.master,
        "spark_version": run.spark.version,
        "app_id": run.sc.applicationId,
        "parallelism": run.sc.defaultParallelism,
        "replay_partitions": partitions,
        "inputs": list(inputs),
        "files": len(files),
        "format": settings.fmt,
        "formats": sorted(parse_report.by_format),
        "tz": settings.tz,
        "cluster_id": settings.cluster_id,
        "whatif_assignors": list(whatif),
        "out_dir": str(run.out),
        "timings": timings,
        "seconds": round(sum(timings.values()), 3),
        "counts": {"files": len(files), "events": parse_report.events, **rows},
        "busy_groups": [list(key) for key in busy],
    }


def _write_report(outcome: SparkResult, collected: dict[str, list[dict[str, Any]]]) -> tuple[Path, Any]:
    """(the page's path, the :class:`~rebalance_lab.replay.report.Summary` it shows, for the terminal)."""
    from rebalance_lab.replay.report import summarize, write_report

    summary = summarize(collected, outcome.meta)
    path = write_report(outcome.out_dir, collected, outcome.parse_report, outcome.meta, summary=summary)
    outcome.meta["report"] = str(path)
    return path, summary


def _summary(outcome: SparkResult, collected: dict[str, list[dict[str, Any]]], shown: Any) -> str:
    from rebalance_lab.replay.report import terminal_summary

    return terminal_summary(collected, outcome.parse_report, outcome.meta, summary=shown)
