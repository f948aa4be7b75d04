"""``rebalance-lab diff SCENARIO --against HOST:PORT``: exit 0 when the emulator and the
broker answer alike, 1 when they differ, 2 on a usage error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.cli import main
from rebalance_lab.scenarios.library import LIBRARY

EXE = str(Path(sys.executable).with_name("rebalance-lab"))
SCENARIOS = LIBRARY


def _diff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "diff", *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.broker
def test_diff_reports_the_same_transcript_against_a_real_broker(kafka_broker: Any) -> None:
    flavor = "kafka-4" if kafka_broker.flavor == "4" else "kafka-3"
    result = _diff(str(SCENARIOS / "join_three_members.yaml"), "--against", kafka_broker.bootstrap,
                   "--flavor", flavor)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "same transcript" in result.stdout


@pytest.mark.broker
def test_diff_shows_the_differences_when_the_flavor_does_not_match_the_broker(kafka_broker: Any) -> None:
    # the protocol tie break is the visible difference between the Java and the Scala coordinator
    wrong = "kafka-3" if kafka_broker.flavor == "4" else "kafka-4"
    result = _diff(str(SCENARIOS / "protocol_tie_break.yaml"), "--against", kafka_broker.bootstrap,
                   "--flavor", wrong)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "differ" in result.stdout
    assert "protocol_name: range" in result.stdout and "protocol_name: roundrobin" in result.stdout


@pytest.mark.parametrize("args", [
    [],                                                       # no scenario
    [str(SCENARIOS / "join_three_members.yaml")],             # no --against
    [str(SCENARIOS / "join_three_members.yaml"), "--against", "no-port"],
    [str(SCENARIOS / "join_three_members.yaml"), "--against", "h:1", "--flavor", "kafka-2"],
])
def test_a_usage_error_exits_2_with_one_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["diff", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err


def test_a_missing_or_invalid_scenario_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(tmp_path / "missing.yaml"), "--against", "127.0.0.1:9"]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - fly: a\n", encoding="utf-8")
    assert main(["diff", str(bad), "--against", "127.0.0.1:9"]) == 2
    assert capsys.readouterr().err.count("cannot load scenario") == 2
