"""The ``rebalance-lab`` command: serve prints its address and stops cleanly; bad input is one line, exit 2."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

EXE = str(Path(sys.executable).with_name("rebalance-lab"))
BOOTSTRAP = re.compile(r"bootstrap servers: (\S+)")


def _serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([EXE, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = BOOTSTRAP.search(line)
    assert match, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    return proc, match.group(1)


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, bootstrap = _serve("--brokers", "3", "--topic", "t:3")
    yield proc, bootstrap
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_serve_prints_one_address_per_broker_and_stops_cleanly_on_ctrl_c(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    proc, bootstrap = served
    addresses = bootstrap.split(",")
    assert len(addresses) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
    for address in addresses:
        host, port = address.split(":")
        socket.create_connection((host, int(port)), timeout=5).close()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "rebalance-lab stopped" in out
    assert "Traceback" not in err


def test_serve_on_a_port_in_use_is_a_one_line_error_with_exit_code_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([EXE, "serve", "--port", str(port)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.parametrize("args", [
    ["serve", "--bogus"], ["serve", "--port", "abc"], ["serve", "--brokers", "0"], ["serve", "--flavor", "kafka-2"],
    ["serve", "--topic", "t:x"], ["serve", "--brokers", "2", "--racks", "a"], [], ["frobnicate"],
])
def test_a_bad_command_line_is_a_one_line_error_with_exit_code_2(args: list[str]) -> None:
    result = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("rebalance-lab")


def test_help_describes_every_serve_option() -> None:
    result = subprocess.run([EXE, "serve", "--help"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    for option in ("--host", "--port", "--brokers", "--flavor", "--topic", "--num-partitions",
                   "--no-auto-create-topics", "--initial-rebalance-delay-ms", "--record", "--explain"):
        assert option in result.stdout


def test_serve_writes_a_recording_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    proc, _bootstrap = _serve("--topic", "t:2", "--record", str(path))
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert '"topic_partitions":{"t":2}' in path.read_text()


def test_the_readme_demo_plays_every_step_with_real_clients(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CI": "true"}
    result = subprocess.run([EXE, "demo", "--record", str(tmp_path / "demo.jsonl")], capture_output=True,
                            text=True, timeout=420, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "candidates (offered by every member): range, roundrobin" in out
    assert "range wins 2 to 1" in out
    assert "sent LeaveGroup" in out
    assert "expired: no heartbeat within its session timeout" in out
    assert "is back as member" in out and "no rebalance: a static member back within its session timeout" in out
    # the ending is the static-membership lesson, ended at once by the operator's expire (issue 19, item 6)
    assert "the coordinator keeps its place and its partitions" in out and "expired by the operator" in out
    assert "static-1 removed: the others rebalanced at once" in out
    assert max(len(line) for line in out.splitlines() if line.startswith(("[", "    "))) <= 100
    assert (tmp_path / "demo.jsonl").stat().st_size > 0
    # ... and ends by replaying its own recording (engine auto: the single process), pointing at the report
    report = tmp_path / "demo-replay" / "report.html"
    assert f"the replay's report: {report.resolve().as_uri()}" in out
    assert "demo-group" in report.read_text(encoding="utf-8")
    for table in ("events", "group_generations", "rebalance_episodes", "whatif_results"):
        assert any((tmp_path / "demo-replay" / table).glob("*.parquet")), table
    snapshots = (tmp_path / "demo.jsonl").read_text().count('"event_type":"GENERATION_SNAPSHOT"')
    generations = pq.read_table(tmp_path / "demo-replay" / "group_generations").to_pylist()
    assert snapshots == sum(1 for g in generations if g["has_snapshot"]) > 0
