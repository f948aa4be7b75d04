"""``rebalance-lab play``: packaged scenarios on an in-process emulator with a manual clock (issue 19 item 3)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from rebalance_lab.cli import main
from rebalance_lab.config import Flavor
from rebalance_lab.scenarios import diff_transcripts, library, load_scenario, run_on_emulator
from rebalance_lab.scenarios.play import PlayOptions, StepGate, answer_text, flavor_for, play_async

EXE = str(Path(sys.executable).with_name("rebalance-lab"))


def _play(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(["play", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_play_list_names_every_packaged_scenario_with_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _play("--list", capsys=capsys)
    lines = out.splitlines()
    assert status == 0
    assert [line.split(":", 1)[0] for line in lines] == library.names()
    assert len(lines) >= 107
    summaries = [line.split(": ", 1)[1] for line in lines]
    assert all(s and s[0].isupper() and "spec " not in s.lower() for s in summaries), summaries


def test_packaged_scenario_names_are_unique() -> None:
    assert len(set(library.names())) == len(library.names())


def test_an_unknown_scenario_exits_2_and_suggests_names(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _play("protocol_tie", capsys=capsys)
    assert status == 2 and out == ""
    assert "no scenario named 'protocol_tie'; did you mean" in err and "protocol_tie_break" in err
    assert "rebalance-lab play --list" in err


def test_play_without_a_scenario_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _play(capsys=capsys)
    assert status == 2 and "play needs a SCENARIO" in err


def test_a_scenario_written_for_kafka_3_refuses_kafka_4(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _play("kip848_kafka3_not_supported", "--flavor", "kafka-4", capsys=capsys)
    assert status == 2 and "written for kafka-3, not kafka-4" in err


def test_play_prints_each_request_then_the_narration_then_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _play("protocol_tie_break", capsys=capsys)
    assert status == 0
    lines = out.splitlines()
    step = lines.index("step 7: join [a]")
    request = lines.index("  a -> JoinGroup v9", step)
    answer = next(i for i, line in enumerate(lines) if line.startswith("  a <- NONE generation_id=2"))
    assert step < request < answer
    assert any("range" in line for line in lines[request + 1:answer])  # the coordinator's narration of the vote
    assert "protocol_name=range" in lines[answer]


def test_the_same_tie_goes_to_roundrobin_on_kafka_3(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _play("protocol_tie_break", "--flavor", "kafka-3", capsys=capsys)
    assert status == 0 and "generation_id=2 protocol_name=roundrobin" in out


def test_explain_prints_every_answer_whole(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _play("join_three_members", "--explain", capsys=capsys)
    assert status == 0
    assert "  c <- JoinGroup v9" in out and "    protocol_name: range" in out and "    is_leader: false" in out


class _RecordingStdin(io.StringIO):
    """Standard input that notes how much had been printed each time a line was asked for."""

    def __init__(self, text: str, out: IO[str]) -> None:
        super().__init__(text)
        self.out = out
        self.printed_when_asked: list[str] = []

    def readline(self, size: int | None = -1) -> str:
        self.printed_when_asked.append(self.out.getvalue() if isinstance(self.out, io.StringIO) else "")
        return super().readline(size)


def test_step_waits_for_enter_before_each_step_and_stops_waiting_at_end_of_input() -> None:
    out = io.StringIO()
    stdin = _RecordingStdin("\n\n", out)
    scenario = load_scenario(library.path_of("join_three_members"))
    transcript = asyncio.run(play_async(scenario, out, PlayOptions(step=True), stdin))
    assert transcript.ok
    asked = stdin.printed_when_asked
    assert len(asked) == 3  # two Enters, then end of input: the other steps run without asking
    for number, printed in enumerate(asked, 1):
        assert f"-- Enter to send step {number}:" in printed and f"\nstep {number}:" not in printed
    assert out.getvalue().count("-- Enter to send step") == 3


def test_a_gate_without_input_never_waits() -> None:
    out = io.StringIO()
    asyncio.run(StepGate(None, out).wait("1: join [a]"))
    assert out.getvalue() == ""


def test_play_step_with_stdin_from_dev_null_runs_to_the_end() -> None:
    with open("/dev/null", encoding="utf-8") as devnull:
        done = subprocess.run([EXE, "play", "leave_and_rejoin", "--step"], stdin=devnull, capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "step 15: leave [a] version=1" in done.stdout and "step 17: list" in done.stdout


def test_an_answer_reads_as_one_line_with_its_error_first() -> None:
    fields = {"throttle_time_ms": 0, "error_code": "NONE", "generation_id": 2, "protocol_name": "range",
              "members": [{"member_id": "<a>"}, {"member_id": "<b>"}]}
    assert answer_text(fields) == "NONE generation_id=2 protocol_name=range members=[member_id=<a>; member_id=<b>]"


def test_the_default_flavor_is_the_scenarios_release_line() -> None:
    scenario = load_scenario(library.path_of("kip848_kafka3_not_supported"))
    assert flavor_for(scenario, None) == Flavor.KAFKA_3
    assert flavor_for(load_scenario(library.path_of("protocol_vote")), None) == Flavor.KAFKA_4


@pytest.mark.parametrize("path", library.paths(), ids=lambda p: p.stem)
def test_every_packaged_scenario_plays_on_the_manual_clock_with_its_expectations_met(path: Path) -> None:
    out = io.StringIO()
    transcript = asyncio.run(play_async(load_scenario(path), out, PlayOptions()))
    assert transcript.failures == []
    assert [line for line in out.getvalue().splitlines() if len(line) > 100] == []  # fits a terminal


# Scenarios whose outcome hangs on the coordinator's timers (initial delay and its extension, session and
# pending-member expiry, the pending-sync timer, a KIP-848 rebalance timeout): on the manual clock they must
# read exactly as a real-time run on the emulator (which tests/integration/test_scenarios.py compares with
# the real brokers).
_TIMED = ["delay_extension", "heartbeat_session_expiry", "kip394_pending_member_expiry", "sync_pending_sync_timeout",
          "kip848_rebalance_timeout"]


@pytest.mark.parametrize("name", _TIMED)
def test_a_timed_scenario_on_the_manual_clock_reads_as_a_real_time_run(name: str) -> None:
    scenario = dataclasses.replace(load_scenario(library.path_of(name)), unique_names=False)
    flavor = flavor_for(scenario, None)
    played = asyncio.run(play_async(scenario, io.StringIO(), PlayOptions()))
    real = asyncio.run(run_on_emulator(scenario, flavor))
    assert diff_transcripts(real, played) == []


def test_diff_takes_a_packaged_scenarios_name(capsys: pytest.CaptureFixture[str]) -> None:
    from rebalance_lab.api import Emulator

    with Emulator(initial_rebalance_delay_ms=0, api_versions="kafka-4") as emulator:  # as diff's own emulator
        status = main(["diff", "protocol_tie_break", "--against", emulator.bootstrap_servers])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "protocol_tie_break: same transcript on the emulator (kafka-4)" in out


def test_diff_with_an_unknown_name_exits_2_and_suggests_names(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["diff", "protocol_tie", "--against", "127.0.0.1:1"])
    _, err = capsys.readouterr()
    assert status == 2 and "did you mean protocol_vote, protocol_tie_break" in err
