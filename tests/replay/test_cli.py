"""``python -m rebalance_lab.replay`` (what ``rebalance-lab replay`` runs): the demo's recording to a report,
and bad arguments refused with exit code 2 before any Spark starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_lab.replay import tables
from rebalance_lab.replay.cli import EXIT_USAGE, main, whatif_choices

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's own recording (``rebalance-lab demo --record``): real kafka-python consumers, about 10 s."""
    path = tmp_path_factory.mktemp("demo") / "demo-recording.jsonl"
    done = subprocess.run([sys.executable, "-m", "rebalance_lab.cli", "demo", "--record", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return path


def test_the_demo_recording_replays_into_parquet_tables_and_a_report(demo_recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "rebalance_lab.replay", str(demo_recording), "--out", str(out),
                           "--what-if", "cooperative-sticky", "--master", "local[2]"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (out / "report.html").is_file()
    for name in (*tables.TABLES, "events"):
        assert list((out / name).glob("*.parquet")), name
    assert "demo-group" in done.stdout
    assert f"report: {(out / 'report.html').resolve()}" in done.stdout
    assert "parse+replay done in" in done.stderr and "commit done in" in done.stderr  # progress, on stderr


@pytest.mark.parametrize(("args", "message"), [
    (["{missing}"], "no such file or directory"),
    (["{dir}/nothing-*.log"], "no input files there"),
    (["{input}", "--tz", "Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
    (["{input}", "--master", "lokal[2]"], "'lokal[2]' is not a Spark master URL"),
    (["{input}", "--conf", "spark.executor.memory"], "--conf expects KEY=VALUE"),
    (["{input}", "--out", "{input}/out"], "cannot write to output directory"),
])
def test_a_bad_argument_is_one_line_and_exit_2_before_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            no_spark: list[str], args: list[str],
                                                            message: str) -> None:
    recording = tmp_path / "rec.jsonl"
    recording.write_text("{}\n")
    values = {"missing": str(tmp_path / "missing.jsonl"), "dir": str(tmp_path), "input": str(recording)}
    assert main([a.format(**values) for a in args]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("rebalance-lab replay: error: ") and message in err and "\n" not in err
    assert no_spark == []


@pytest.mark.parametrize(("args", "message"), [
    (["--what-if", "fastest"], "argument --what-if: invalid choice: 'fastest'"),
    (["--format", "syslog"], "argument --format: invalid choice: 'syslog'"),
])
def test_an_unknown_assignor_or_format_is_refused_by_the_parser(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                no_spark: list[str], args: list[str],
                                                                message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path), *args])
    assert exited.value.code == EXIT_USAGE
    assert message in capsys.readouterr().err
    assert no_spark == []


def test_a_bad_argument_does_not_even_import_pyspark(tmp_path: Path) -> None:
    code = ("import sys\nfrom rebalance_lab.replay.cli import main\n"
            f"rc = main([{str(tmp_path / 'missing.log')!r}])\n"
            "print(rc, 'pyspark' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.split() == ["2", "False"], done.stderr


def test_inputs_can_also_be_given_as_input_options_for_spark_submit(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    no_spark: list[str]) -> None:
    assert main(["--input", str(tmp_path / "missing.log"), "--output", str(tmp_path / "out")]) == EXIT_USAGE
    assert "missing.log: no such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "out")])
    assert "give at least one INPUT" in capsys.readouterr().err


def test_the_what_if_choices_are_the_models() -> None:
    from rebalance_lab.replay.model import WHATIF_MODES
    from rebalance_lab.replay.whatif import ASSIGNORS

    assert set(whatif_choices()) == {*ASSIGNORS, *WHATIF_MODES}


def test_building_the_parser_imports_neither_pyarrow_nor_pyspark() -> None:
    code = ("import argparse, sys\nfrom rebalance_lab.replay.cli import add_replay_parser\n"
            "add_replay_parser(argparse.ArgumentParser().add_subparsers())\n"
            "print('pyarrow' in sys.modules, 'pyspark' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.split() == ["False", "False"], done.stderr
