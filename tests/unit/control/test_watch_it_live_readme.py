"""The README's "Watch it live" command runs as written (on free ports): the page answers with the clock buttons."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _command() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Watch it live", 1)[1].split("\n## ", 1)[0]
    (line,) = [line for line in section.splitlines() if line.startswith(".venv/bin/rebalance-lab")]
    return shlex.split(line)


def test_the_readme_watch_it_live_command_serves_the_page_with_buttons_that_step_the_clock() -> None:
    args = [a if a != "8085" else "0" for a in _command()[1:]]  # free ports, as the command is otherwise
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_lab.cli", *args, "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        page_url = lines[2].strip().removeprefix("live page: ")
        assert lines[2].startswith("live page: http://127.0.0.1:"), lines
        with urllib.request.urlopen(page_url, timeout=10) as answer:
            page = answer.read().decode()
        assert "manual clock" in page and "to the next group timer" in page
        advance = urllib.request.Request(page_url + "advance", data=json.dumps({"ms": 100}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(advance, timeout=10) as answer:
            assert json.load(answer)["advanced_ms"] == 100
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, rest


def test_a_manual_clock_without_the_control_endpoint_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "rebalance_lab.cli", "serve", "--manual-clock", "--port", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--manual-clock needs --control-port" in proc.stderr, proc.stderr
