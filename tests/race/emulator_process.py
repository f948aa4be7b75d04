"""``rebalance-lab serve`` in a child process, so that a client's busy wait between two writes does not
hold the emulator's loop (in one process the GIL would queue every rejoin until the burst is sent)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BOOTSTRAP = re.compile(r"bootstrap servers: (\S+):(\d+)")


@contextmanager
def serve(*options: str, timeout_s: float = 60.0) -> Iterator[tuple[str, int]]:
    """Yield (host, port) of a ``serve --port 0`` child with ``options``; stop it afterwards."""
    args = [sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", "--initial-rebalance-delay-ms", "0",
            *options]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"serve exited with {proc.wait()}:\n{''.join(lines)}")
            lines.append(line)
            if found := _BOOTSTRAP.search(line):
                break
        else:
            raise AssertionError(f"serve did not start in {timeout_s} s:\n{''.join(lines)}")
        yield found.group(1), int(found.group(2))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
