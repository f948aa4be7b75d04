"""benchmarks/replay_scale_inputs.py: the streamed inputs are the files the whole-run sort writes, whatever the
number of processes and the chunk size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import replay_scale_inputs as inputs  # noqa: E402

from rebalance_lab.observe.formats import render  # noqa: E402


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _written_at_once(n_events: int, n_groups: int, seed: int) -> dict[str, bytes]:
    """The rendered inputs as written before streaming: every broker's events held, sorted stably by time, rendered;
    each offsets partition's records taken from its broker's sorted events."""
    per_broker: dict[int, list[dict[str, Any]]] = {}
    for events in inputs.generate(n_events, n_groups, seed):
        per_broker.setdefault(inputs._coordinator(events[0]["group_id"])[1], []).extend(events)
    files: dict[str, list[str]] = {}
    per_partition: dict[int, list[dict[str, Any]]] = {}
    for broker, events in sorted(per_broker.items()):
        ordered = sorted(events, key=lambda e: e["ts"])
        flavour = "broker-log-java" if broker < inputs.BROKERS // 2 else "broker-log-scala"
        hour = ""
        for line in render(ordered, flavour, broker_id=broker, noise=True):
            if line.startswith("[") and line[11:12] == " ":
                hour = line[1:14].replace(" ", "-")  # a stack trace's lines stay with the line they follow
            files.setdefault(f"broker-{broker}/server.log.{hour}", []).append(line)
        for event in ordered:
            if event["event_type"] in inputs.DUMPED:
                per_partition.setdefault(inputs._coordinator(event["group_id"])[0], []).append(event)
    for partition, events in per_partition.items():
        files[f"__consumer_offsets-{partition}.dump.txt"] = list(
            render(events, "dump-log", offsets_partitions=inputs.OFFSETS_PARTITIONS))
    return {name: "".join(line + "\n" for line in lines).encode() for name, lines in sorted(files.items())}


def test_streamed_rendered_inputs_are_the_files_the_whole_run_sort_writes(tmp_path: Path) -> None:
    files, counts = inputs.write_inputs(tmp_path / "work", 3_000, 30, 5, "rendered", workers=2, chunk_groups=4)
    streamed = _tree(tmp_path / "work" / "inputs")
    assert streamed == _written_at_once(3_000, 30, 5)
    assert sorted(str(f.relative_to(tmp_path / "work" / "inputs")) for f in files) == sorted(streamed)
    assert 3_000 <= counts["evidence"] < counts["rows"]
    assert not (tmp_path / "work" / "runs").exists()  # the spilled runs are removed once merged


@pytest.mark.parametrize("mode", ["rendered", "jsonl"])
def test_streamed_inputs_do_not_depend_on_the_processes_or_the_chunk_size(tmp_path: Path, mode: str) -> None:
    one = inputs.write_inputs(tmp_path / "one", 2_000, 25, 9, mode, workers=1, chunk_groups=25)
    two = inputs.write_inputs(tmp_path / "two", 2_000, 25, 9, mode, workers=2, chunk_groups=3)
    assert _tree(tmp_path / "one" / "inputs") == _tree(tmp_path / "two" / "inputs")
    assert one[1] == two[1]
    assert [f.relative_to(tmp_path / "one") for f in one[0]] == [f.relative_to(tmp_path / "two") for f in two[0]]


def test_the_merge_of_runs_keeps_the_earlier_runs_event_first_at_equal_times(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = [{"ts": t, "run": 0, "n": n} for n, t in enumerate([1, 5, 5, 9] * 1 + [9] * (inputs.FRAME_EVENTS + 2))]
    second = [{"ts": t, "run": 1, "n": n} for n, t in enumerate([0, 5, 9, 12])]
    inputs._spill(runs / "00000", first)
    inputs._spill(runs / "00001", second)
    assert list(inputs.merged(runs)) == sorted(first + second, key=lambda e: e["ts"])  # sorted is stable


def test_a_second_run_leaves_inputs_another_process_is_writing_alone(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "runs").mkdir(parents=True)
    (work / inputs.WRITER).write_text(str(os.getpid()))  # a live process, not done: no inputs.json yet
    with pytest.raises(SystemExit, match="being written by process"):
        inputs.write_inputs(work, 1_000, 10, 3, "rendered")
    assert (work / "runs").exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    (work / inputs.WRITER).write_text(gone.stdout.strip())  # a writer that died: its leftovers are written again
    files, _ = inputs.write_inputs(work, 1_000, 10, 3, "rendered")
    assert files and not (work / "runs").exists() and not (work / inputs.WRITER).exists()
