"""One damaged line of a recording (found by tests/unit/observe/test_recording_fuzz.py): the replay counts it with
its reason and replays every intact line; ``export`` and ``diagram`` refuse the file with one line naming the file
and line. Before the fixes the replay raised out of the reader for each (a traceback, or with --events-jsonl the
whole run lost to "year 10000 is out of range"), and export/diagram raised (deep nesting, 5,000 digits, a lone
surrogate, a generation beyond int32, a time past 9999) or wrote a value of the wrong type into a real format."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab import cli
from rebalance_lab.replay.local import run_local

SAMPLE = Path(__file__).parent / "samples" / "demo-recording.jsonl"
LINES = SAMPLE.read_text(encoding="utf-8").splitlines()
SNAPSHOT = next(i for i, line in enumerate(LINES) if '"GENERATION_SNAPSHOT"' in line)
SYNC = next(i for i, line in enumerate(LINES) if '"SYNC_LEADER_ASSIGNMENT"' in line)


def _with(index: int, **changes: Any) -> str:
    row = json.loads(LINES[index])
    row.update(changes)
    return json.dumps(row, separators=(",", ":"))


def _nested(index: int, depth: int) -> str:
    return LINES[index][:-1] + ',"detail":' + "[" * depth + "]" * depth + "}"


def _digits(index: int) -> str:
    return LINES[index].replace('"generation":1', '"generation":' + "9" * 5000, 1)


# (name, the line's index, the damaged line, the replay's reason)
DAMAGED = [
    ("nested-too-deeply", SYNC, _nested(SYNC, 100_000), "not JSON"),
    ("integer-of-5000-digits", SYNC, _digits(SYNC), "not JSON"),
    ("group-id-a-list", SYNC, _with(SYNC, group_id=["demo-group"]), "bad value"),
    ("group-id-an-integer", SYNC, _with(SYNC, group_id=7), "bad value"),
    ("reason-code-an-integer", SYNC, _with(SYNC, reason_code=3), "bad value"),
    ("member-id-a-lone-surrogate", SNAPSHOT, _with(SNAPSHOT, leader_id="consumer-\ud800"), "bad value"),
    ("partition-not-an-integer", SNAPSHOT,
     LINES[SNAPSHOT].replace('"partition":0', '"partition":"0"', 1), "bad value"),
    ("event-type-a-list", SYNC, _with(SYNC, event_type=["SYNC_LEADER_ASSIGNMENT"]), "unknown event_type"),
    ("generation-the-last-int32", SYNC, _with(SYNC, generation=2**31 - 1), "bad value"),
    ("generation-beyond-int32", SNAPSHOT, _with(SNAPSHOT, generation=2**31), "bad value"),
    ("ts-past-the-year-9999", SYNC, _with(SYNC, ts="9999-12-31T23:59:59.999-23:59"), "ts"),
]


def _damaged_file(tmp_path: Path, index: int, line: str) -> Path:
    assert line != LINES[index]
    path = tmp_path / "damaged.jsonl"
    path.write_bytes("".join(text + "\n" for text in [*LINES[:index], line, *LINES[index + 1:]])
                     .encode("utf-8", "surrogatepass"))
    return path


@pytest.mark.parametrize(("index", "line", "reason"), [case[1:] for case in DAMAGED], ids=[c[0] for c in DAMAGED])
def test_the_replay_counts_a_damaged_line_and_replays_every_intact_one(
        tmp_path: Path, index: int, line: str, reason: str) -> None:
    path = _damaged_file(tmp_path, index, line)
    result = run_local([path], "emulator", whatif=("range",), out_dir=tmp_path / "out")
    assert result.errors == []
    assert (result.report.unparsed, result.report.reasons) == (1, {reason: 1})
    assert result.report.samples[0]["ref"].endswith(f"{path.name}:{index + 1}")
    assert result.events == len(LINES) - 1
    assert len(result.tables["group_generations"]) >= 5


def _cli(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(args)
    return status, err.getvalue()


# export and diagram render generation 2**31 - 1 as it is (they count nothing on from it)
EXPORTED = [case for case in DAMAGED if case[0] != "generation-the-last-int32"]


@pytest.mark.parametrize(("index", "line"), [case[1:3] for case in EXPORTED], ids=[c[0] for c in EXPORTED])
@pytest.mark.parametrize("command", ["export-dump-log", "export-broker-log-java", "export-client-log", "diagram"])
def test_export_and_diagram_refuse_a_damaged_line_in_one_line_naming_it(
        tmp_path: Path, index: int, line: str, command: str) -> None:
    path = _damaged_file(tmp_path, index, line)
    if command == "diagram":
        args = ["diagram", str(path), "--group", "demo-group", "--format", "svg", "--out", str(tmp_path / "d.svg")]
    else:
        args = ["export", str(path), "--as", command.removeprefix("export-"), "--out", str(tmp_path / "out")]
    status, err = _cli(args)
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{path}:{index + 1}: " in err
