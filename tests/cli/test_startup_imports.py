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


def modules_of_a_serve(tmp_path: Path, *options: str) -> list[str]:
    listing = tmp_path / "modules.txt"
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(listing), *options], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert re.search(r"bootstrap servers: \S+", proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    return listing.read_text().split()


def test_serve_imports_no_replay_diagram_play_export_format_or_scram_module(tmp_path: Path) -> None:
    loaded = modules_of_a_serve(tmp_path)
    assert "rebalance_lab.coordinator.server" in loaded
    assert [m for m in loaded if m.startswith(NOT_ON_SERVES_PATH)] == []


def test_serve_with_scram_users_imports_scramp(tmp_path: Path) -> None:
    loaded = modules_of_a_serve(tmp_path, "--listener", "SASL_PLAINTEXT", "--sasl-mechanism",
                                "SCRAM-SHA-256", "--user", "alice:secret")
    assert "scramp" in loaded
