"""The README's ``--data-dir`` commands run as written (on a free port), twice on the same directory."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.durability.server_process import ROOT

README = ROOT / "README.md"


def _commands() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Keeping state across restarts (`--data-dir`)", 1)[1].split("\n## ", 1)[0]
    lines = [line.split("#", 1)[0] for line in section.splitlines() if line.startswith(".venv/bin/rebalance-lab")]
    return [shlex.split(line) for line in lines]


def _serve(args: list[str], cwd: Path) -> str:
    command = [sys.executable, "-m", "rebalance_lab.cli", *args[1:], "--port", "0"]
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    assert "listening; bootstrap servers" in first and proc.returncode == 0, first + rest
    return first + rest


def test_the_readme_data_dir_commands_start_and_stop_on_the_same_directory(tmp_path: Path) -> None:
    commands = _commands()
    assert len(commands) == 2 and all("--data-dir" in c for c in commands)
    for command in commands:
        _serve(command, tmp_path)
    assert (tmp_path / "rbl-data" / "__cluster_metadata-0").is_dir()
