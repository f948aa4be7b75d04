"""Smoke run of benchmarks/live_page.py with tiny parameters, so CI proves the script runs (its figures are printed,
never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_live_page_benchmark_prints_its_figures_with_and_without_browsers() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "live_page.py"), "--members", "20",
                             "--rounds", "1"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "no browser: formed in" in out and "one browser following: formed in" in out, out
    assert "the stalled one had" in out and "GET / with 3 groups of 20 members" in out and "VmHWM" in out
