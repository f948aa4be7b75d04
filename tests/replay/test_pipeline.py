"""End to end on Spark: a recorded emulator scenario, replayed, gives back what the emulator did.

The scenario (:mod:`tests.replay.scenario`) runs an eager ``range`` group and a
``cooperative-sticky`` group of light members: joins, a LeaveGroup, a crash expired by its
session timeout, a static member restarting without a rebalance, cooperative follow-up
rounds. Its GENERATION_SNAPSHOT rows are the truth the replay must rebuild.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rebalance_lab.replay import tables
from rebalance_lab.replay.local import run_local
from rebalance_lab.replay.spark import SparkResult, run_spark
from tests.replay.scenario import COOPERATIVE_GROUP, EAGER_GROUP

Rows = list[dict[str, Any]]


def read_table(directory: Path) -> Rows:
    return tables.from_arrow(pq.read_table(directory))


def canonical(rows: Rows) -> list[str]:
    """Rows in an order-free, comparable form."""
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def _assignment(members: list[dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    return {m["member_id"]: sorted((p["topic"], p["partition"]) for p in m["assignment"] or []) for m in members}


@pytest.fixture(scope="module")
def replayed(spark: Any, recording: Path, tmp_path_factory: pytest.TempPathFactory) -> SparkResult:
    out = tmp_path_factory.mktemp("spark-out")
    return run_spark(spark, [str(recording)], whatif=("range", "cooperative-sticky"), out_dir=out, report=False)


def test_every_recorded_line_is_parsed_and_every_group_replayed(replayed: SparkResult, recording: Path) -> None:
    lines = len(recording.read_text().splitlines())
    report = replayed.parse_report
    assert (report.files, report.lines, report.events, report.unparsed) == (1, lines, lines, 0)
    assert replayed.errors == []
    summaries = read_table(replayed.out_dir / "group_summary")
    assert sorted(r["group_id"] for r in summaries) == [EAGER_GROUP, COOPERATIVE_GROUP]
    assert len(pq.read_table(replayed.out_dir / "events")) == lines


def test_generations_leaders_protocols_and_assignments_equal_the_recording(replayed: SparkResult,
                                                                         recording: Path) -> None:
    rows = [json.loads(line) for line in recording.read_text().splitlines()]
    snapshots = {(r["group_id"], r["generation"]): r for r in rows if r["event_type"] == "GENERATION_SNAPSHOT"}
    generations = {(r["group_id"], r["generation"]): r for r in read_table(replayed.out_dir / "group_generations")}
    assert {key for key, g in generations.items() if g["has_snapshot"]} == set(snapshots)
    for key, snapshot in snapshots.items():
        got = generations[key]
        assert (got["leader_id"], got["protocol"]) == (snapshot["leader_id"], snapshot["protocol"]), key
        assert _assignment(got["members"]) == _assignment(snapshot["members"]), key
    protocols = {group: {g["protocol"] for (gid, _), g in generations.items() if gid == group and g["protocol"]}
                 for group in (EAGER_GROUP, COOPERATIVE_GROUP)}
    assert protocols == {EAGER_GROUP: {"range"}, COOPERATIVE_GROUP: {"cooperative-sticky"}}
    assert max(gen for gid, gen in snapshots if gid == COOPERATIVE_GROUP) >= 5  # the follow-up rounds are there


def test_a_whatif_with_the_recorded_assignor_reproduces_every_generation(replayed: SparkResult) -> None:
    rows = read_table(replayed.out_dir / "whatif_results")
    for group, assignor in ((EAGER_GROUP, "range"), (COOPERATIVE_GROUP, "cooperative-sticky")):
        mine = [r for r in rows if r["group_id"] == group and r["assignor"] == assignor]
        assert mine, group
        assert all(r["reproduced"] for r in mine), [(r["episode_id"], r["reproduced"]) for r in mine]


def test_spark_writes_the_same_tables_as_the_single_process_runner(replayed: SparkResult, recording: Path,
                                                                   tmp_path: Path) -> None:
    local = run_local([str(recording)], whatif=("range", "cooperative-sticky"), out_dir=tmp_path)
    assert local.errors == []
    for name in tables.TABLES:
        spark_rows = read_table(replayed.out_dir / name)
        assert canonical(spark_rows) == canonical(local.tables[name]), name
        assert canonical(read_table(tmp_path / name)) == canonical(spark_rows), name
        assert replayed.rows[name] == len(spark_rows)


def test_the_written_tables_have_the_schemas_of_tables_py(replayed: SparkResult) -> None:
    for name, schema in tables.TABLES.items():
        written = pq.read_schema(next((replayed.out_dir / name).glob("*.parquet")))
        assert written.names == schema.names, name
        assert pq.read_table(replayed.out_dir / name).cast(schema).schema.equals(schema), name


def test_the_driver_reads_back_and_reports_with_the_cyclic_collector_off(spark: Any, recording: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-back builds a row dict per summary, episode, generation and what-if (~0.5 M at 1e6 events); with
    the collector on, a quarter of its CPU went to collections (gcpolicy). It is switched on again after."""
    import gc

    from rebalance_lab.replay import spark as spark_module

    seen: dict[str, bool] = {}

    def spy(name: str, function: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen[name] = gc.isenabled()
            return function(*args, **kwargs)
        return wrapped

    for name in ("_collect", "_write_report", "_summary"):
        monkeypatch.setattr(spark_module, name, spy(name, getattr(spark_module, name)))
    result = run_spark(spark, [str(recording)], out_dir=tmp_path, report=True)
    assert result.report_path is not None and result.report_path.exists() and EAGER_GROUP in result.summary
    assert seen == {"_collect": False, "_write_report": False, "_summary": False}
    assert gc.isenabled()


def test_events_can_be_written_as_canonical_json_lines_too(spark: Any, recording: Path, tmp_path: Path) -> None:
    result = run_spark(spark, [str(recording)], out_dir=tmp_path, events_jsonl=True, report=True)
    lines = [json.loads(line) for part in sorted((tmp_path / "events_jsonl").glob("part-*"))
             for line in part.read_text().splitlines()]
    original = [json.loads(line) for line in recording.read_text().splitlines()]
    assert sorted(r["seq"] for r in lines) == [r["seq"] for r in original]
    by_seq = {r["seq"]: r for r in lines}
    for row in original:  # the same values; nulls are left out, and source_ref names the file and line
        expected = {k: v for k, v in row.items() if v is not None and k != "source_ref"}
        assert {k: v for k, v in by_seq[row["seq"]].items() if k != "source_ref"} == expected
    assert result.report_path == tmp_path / "report.html" and result.report_path.exists()
    assert EAGER_GROUP in result.summary and "report: " in result.summary
    assert [name for name, _ in result.phases.items()][:3] == ["parse+replay", "commit", "events-jsonl"]


def test_a_local_session_compiles_with_c1_only_and_a_cluster_keeps_its_executors_jit() -> None:
    """The local driver is the executor and lives for one replay: C2 compilation cost it more CPU than its work."""
    from rebalance_lab.replay.spark import LOCAL_JIT, _launch_settings

    local = _launch_settings("local[2]")
    assert LOCAL_JIT in local["spark.driver.extraJavaOptions"].split()
    assert "-Dlog4j2.configurationFile=" in local["spark.driver.extraJavaOptions"]
    cluster = _launch_settings("spark://127.0.0.1:7077")
    assert LOCAL_JIT not in cluster["spark.driver.extraJavaOptions"] + cluster["spark.executor.extraJavaOptions"]


def _worker_view(batches: Any) -> Any:
    """Run in a Python worker: the daemon module it was forked from, and whether the replay was imported already."""
    import sys

    import pyarrow as pa

    main = getattr(sys.modules["__main__"].__spec__, "name", None)
    preloaded = "rebalance_lab.replay.model" in sys.modules and "pandas" in sys.modules
    compiled = ".zip" not in (sys.modules["pyspark.worker"].__file__ or ".zip")  # the installed PySpark, not the zip
    young_gc = type(sys.modules["pyspark.daemon"].__dict__["gc"]).__name__ == "_YoungCollections"
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"main": main, "preloaded": preloaded, "compiled": compiled,
                                       "young_gc": young_gc}])


def test_the_python_workers_are_forked_from_the_replays_daemon_with_the_replay_already_imported(spark: Any) -> None:
    """Workers inherit the daemon's imports instead of compiling PySpark's zip and the replay again, each."""
    from rebalance_lab.replay.spark import DAEMON_MODULE

    assert spark.conf.get("spark.python.daemon.module") == DAEMON_MODULE
    rows = spark.range(2, numPartitions=2).mapInArrow(
        _worker_view, "main string, preloaded boolean, compiled boolean, young_gc boolean").collect()
    assert [tuple(row) for row in rows] == [(DAEMON_MODULE, True, True, True)] * 2
