"""Every ``python title=...`` block of docs/testing-guide.md runs and succeeds.

A block whose title starts with ``test_`` is a test file and runs under pytest (the plugin is
loaded by its entry point); every other block runs as a script. Each runs in a fresh
interpreter in an empty directory, as a reader would run it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "testing-guide.md"
BLOCK = re.compile(r"^```python title=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXAMPLES = {title: code for title, code in BLOCK.findall(GUIDE.read_text(encoding="utf-8"))}


def test_the_guide_has_an_example_for_each_client_and_each_fault_recipe() -> None:
    titles = set(EXAMPLES)
    assert {"aiokafka_basics.py", "kafka_python_basics.py", "confluent_kafka_basics.py"} <= titles
    assert {"recipe_error.py", "recipe_latency_and_throttle.py", "recipe_close_connections.py",
            "recipe_broker_restart.py", "recipe_move_coordinator.py", "recipe_loading.py",
            "recipe_rebalance_and_expire.py", "manual_clock.py", "test_my_consumer.py"} <= titles
    assert {"kip848_basics.py", "recipe_kip848_faults.py", "kip848_manual_clock.py"} <= titles  # KIP-848 groups


@pytest.mark.parametrize("title", sorted(EXAMPLES))
def test_the_guide_example_runs(title: str, tmp_path: Path) -> None:
    script = tmp_path / title
    script.write_text(EXAMPLES[title], encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", title] if title.startswith("test_") \
        else [sys.executable, title]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{title} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
