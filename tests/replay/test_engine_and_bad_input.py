"""``replay --engine auto|local|spark`` and input with nothing to replay (issue 20 items 2 and 3).

Empty, garbage, binary or coordinator-less input ends with one line and exit code 2 before any
Spark starts (it used to end 14-50 s later with ``ArrowTypeError: Array type doesn't match type of
values set``); partly bad input is replayed with its bad files counted; a demo-sized input runs in
the single process under ``auto``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay import tables
from rebalance_lab.replay.cli import EXIT_USAGE, main
from rebalance_lab.replay.engine import LOCAL_MAX_BYTES, choose
from rebalance_lab.replay.local import run_local
from rebalance_lab.replay.preflight import scan

SAMPLES = Path(__file__).resolve().parents[1] / "unit" / "replay" / "samples"
BROKER_LINE = ("[2026-11-26 10:00:00,000] INFO [BrokerServer id=1] Transition from STARTING to STARTED "
               "(kafka.server.BrokerServer)\n")


def _bad_inputs(tmp_path: Path) -> dict[str, Path]:
    files = {"empty": b"", "garbage": b"hello\nthis is no log\n", "binary": bytes(range(256)) * 8,
             "no-coordinator": BROKER_LINE.encode() * 20}
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.log"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize(("name", "why"), [
    ("empty", "empty.log: empty"),
    ("garbage", "garbage.log: no known format (first line 'hello')"),
    ("binary", "binary.log: binary, not text"),
    ("no-coordinator", "no-coordinator.log: broker-log, but no group-coordinator lines"),
])
@pytest.mark.parametrize("engine", ["auto", "spark"])
def test_input_with_nothing_to_replay_is_one_line_and_exit_2_before_spark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[str], name: str, why: str,
        engine: str) -> None:
    path = _bad_inputs(tmp_path)[name]
    assert main([str(path), "--out", str(tmp_path / "out"), "--engine", engine]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("rebalance-lab replay: error: nothing to replay: ") and why in err, err
    assert "\n" not in err
    assert no_spark == []


def test_all_bad_inputs_together_are_named_in_the_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           no_spark: list[str]) -> None:
    _bad_inputs(tmp_path)
    assert main([str(tmp_path), "--out", str(tmp_path / "out"), "--quiet"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert "binary.log: binary" in err and "empty.log: empty" in err and "and 1 more" in err and "\n" not in err


def test_partly_bad_input_is_replayed_with_the_bad_file_counted(tmp_path: Path) -> None:
    bad = _bad_inputs(tmp_path)
    result = run_local([str(SAMPLES / "broker-scala-3x.log"), str(bad["garbage"]), str(bad["empty"])])
    assert result.events > 0 and result.groups > 0
    assert result.report.reasons.get("unknown format") == 2
    assert scan([str(bad["garbage"]), str(SAMPLES / "broker-scala-3x.log")]).problem() is None


def test_auto_replays_a_demo_sized_input_in_the_single_process_with_the_same_outputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: list[str]) -> None:
    out = tmp_path / "out"
    assert main([str(SAMPLES / "demo-recording.jsonl"), "--out", str(out), "--what-if", "range",
                 "--events-jsonl"]) == 0
    captured = capsys.readouterr()
    assert "rebalance-lab replay: engine local (auto: 0.0 MB of input" in captured.err
    assert "demo-group" in captured.out
    assert (out / "report.html").is_file()
    for name in (*tables.TABLES, "events", "events_jsonl"):
        assert any((out / name).iterdir()), name
    assert no_spark == []


def test_auto_chooses_spark_above_the_threshold_or_with_a_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert choose("auto", LOCAL_MAX_BYTES, master=None)[0] == "local"
    assert choose("auto", LOCAL_MAX_BYTES + 1, master=None)[0] == "spark"
    assert choose("auto", 10, master="local[2]") == ("spark", "a Spark master was given")
    assert choose("local", 10 * LOCAL_MAX_BYTES, master=None) == ("local", "asked for")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert choose("auto", 10, master=None)[0] == "spark"


def test_spark_on_input_without_groups_reports_zero_events_not_an_arrow_type_error(spark: Any,
                                                                                  tmp_path: Path) -> None:
    """Regression: the report's collect asked pyarrow for moves of an empty list of groups (ArrowTypeError)."""
    from rebalance_lab.replay.spark import run_spark

    path = _bad_inputs(tmp_path)["no-coordinator"]
    result = run_spark(spark, [str(path)], out_dir=tmp_path / "out")
    assert result.parse_report.events == 0 and result.errors == []
    assert os.path.isfile(result.report_path or "")


def test_the_local_engine_of_the_command_writes_the_tables_spark_writes(spark: Any, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``--engine local`` (what ``auto`` picks for this input) and Spark give the same rows in every table."""
    from rebalance_lab.replay.spark import run_spark
    from tests.replay.test_pipeline import canonical, read_table

    source = str(SAMPLES / "demo-recording.jsonl")
    assert main([source, "--out", str(tmp_path / "local"), "--engine", "local", "--what-if", "sticky"]) == 0
    assert "engine local (asked for)" in capsys.readouterr().err
    on_spark = run_spark(spark, [source], out_dir=tmp_path / "spark", whatif=("sticky",), report=False)
    for name in tables.TABLES:
        assert canonical(read_table(tmp_path / "local" / name)) == canonical(read_table(on_spark.out_dir / name)), name
