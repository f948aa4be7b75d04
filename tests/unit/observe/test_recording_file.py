"""``--record`` streams to disk, and a write error is reported (logged, counted, an exit code) but never stops the
emulator (issue 17, "recordings streamed to disk"): on 03701b1 a full disk made the start itself fail."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.observe.recording_file import RecordingFile

FULL_DISK = "/dev/full"  # every write fails with ENOSPC


def test_each_line_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    out = RecordingFile(str(path))
    for n in range(3):
        out.write_line(json.dumps({"n": n}))
        assert path.read_text().splitlines()[-1] == json.dumps({"n": n})  # no buffer holds it back
    out.close()
    assert out.status() == {"path": str(path), "written": 3, "lost": 0, "error": None}


def test_a_write_error_is_logged_once_and_later_lines_are_counted_as_lost(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="rebalance_lab.recorder")
    out = RecordingFile(FULL_DISK)
    for n in range(5):
        out.write_line(json.dumps({"n": n}))
    assert [r.getMessage() for r in caplog.records] == [
        "the recording /dev/full failed after 0 events: [Errno 28] No space left on device; later events are not "
        "recorded"]
    out.close()  # the buffered line fails again: still no exception
    assert out.status() == {"path": FULL_DISK, "written": 0, "lost": 5,
                            "error": "0 events written, 5 not (No space left on device)"}
    assert "is incomplete: 0 events written, 5 not" in caplog.records[-1].getMessage()


async def test_an_emulator_whose_recording_fails_keeps_serving_groups_and_says_what_it_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    async with Emulator(topics=[("t", 2)], initial_rebalance_delay_ms=0, record_path=FULL_DISK) as emu:
        member = GroupMember(emu.bootstrap_servers, "g", ["t"], client_id="m", session_timeout_ms=10_000,
                             rebalance_timeout_ms=10_000, heartbeat_interval_ms=50)
        await member.join()
        emu.force_rebalance("g")
        await member.wait_for_generation(2, timeout_s=10)
        await member.close(leave=True)
        status = emu.recording_status()
    assert status is not None and status["written"] == 0 and status["lost"] > 5
    assert status["error"] is not None and "No space left on device" in status["error"]
    failures = [r.getMessage() for r in caplog.records if r.name == "rebalance_lab.recorder"]
    assert len(failures) == 2 and "failed after 0 events" in failures[0] and "is incomplete" in failures[1]
    assert not [r for r in caplog.records if "subscriber failed" in r.getMessage()]


def test_serve_exits_with_an_error_when_its_recording_lost_events() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", "--topic", "t:2",
                             "--record", FULL_DISK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert "listening" in proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "rebalance-lab: error: the recording /dev/full is incomplete: 0 events written" in err
