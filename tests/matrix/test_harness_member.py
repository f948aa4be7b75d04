"""The matrix harness reads every line a driver printed before it says the driver closed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.matrix.harness import Member

# A driver that, told to close, prints 50 record batches and then its "closed" event, and exits at once.
_DRIVER = (
    "import json, sys\n"
    "sys.stdin.readline()\n"
    "for i in range(50):\n"
    "    print(json.dumps({'event': 'records', 'records': [[0, i]]}), flush=True)\n"
    "print(json.dumps({'event': 'closed'}), flush=True)\n"
)


def test_close_returns_after_the_drivers_last_line_was_read(tmp_path: Path) -> None:
    """The reading thread lags here by design (each record batch takes 20 ms to take in, as a loaded machine's
    thread may): the process has exited long before its "closed" line is read. ``close`` waits for it."""
    def slow_bookkeeping(records: list[tuple[int, int]]) -> None:
        time.sleep(0.02)

    member = Member.spawn("c", [sys.executable, "-c", _DRIVER], tmp_path / "stderr", slow_bookkeeping)
    try:
        assert member.close(30) == 0
        assert member.has_event("closed")
        assert member.events[-1] == {"event": "closed"}
    finally:
        member.stop()
