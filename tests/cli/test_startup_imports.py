"""serve imports only what serving needs (issue 22 item 3: start-up): not the replay, the diagrams, play, the
export formats, nor scramp while no SCRAM mechanism is enabled."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

NOT_ON_SERVES_PATH = ("rebalance_lab.replay", "rebalance_lab.observe.formats", "rebalance_lab.observe.diagram",
                      "rebalance_lab.observe.sequence", "rebalance_lab.play_cli", "rebalance_lab.scenarios", "scramp")

SERVE = """
import atexit, sys
atexit.register(lambda: open(sys.argv[1], "w").write("\\n".join(sorted(sys.modules))))
from rebalance_lab.cli import main
sys.exit(main(["serve", "--port", "0", *sys.argv[2:]]))
"""


def modules_of_a_serve(tmp_path: Path, *options: str, handed_over: bool = False) -> list[str]:
    """The modules a serve has imported when stopped right after it listens (``handed_over``: after its early shell
    handed over to the asyncio shell, whose import starts once the early loop is idle: coordinator/early_serve.py)."""
    listing = tmp_path / "modules.txt"
    log = ("--log-level", "INFO") if handed_over else ()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(listing), *options, *log], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if handed_over else None, text=True)
    try:
        assert proc.stdout is not None
        assert re.search(r"bootstrap servers: \S+", proc.stdout.readline())
        while handed_over and proc.stderr is not None and "early shell: " not in proc.stderr.readline():
            assert proc.poll() is None, "serve ended before its early shell handed over"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    return listing.read_text().split()


def test_serve_imports_no_replay_diagram_play_export_format_or_scram_module(tmp_path: Path) -> None:
    loaded = modules_of_a_serve(tmp_path, handed_over=True)
    assert "rebalance_lab.coordinator.server" in loaded
    assert [m for m in loaded if m.startswith(NOT_ON_SERVES_PATH)] == []


def test_serve_with_scram_users_imports_scramp(tmp_path: Path) -> None:
    loaded = modules_of_a_serve(tmp_path, "--listener", "SASL_PLAINTEXT", "--sasl-mechanism",
                                "SCRAM-SHA-256", "--user", "alice:secret")
    assert "scramp" in loaded
