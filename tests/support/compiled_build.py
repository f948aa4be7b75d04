"""Tests of the compiled build (rebalance_lab/compiled.py): whether one is here, and a script run in a fresh
interpreter that loads it (or, ``python_only``, the pure Python), reporting back one line of JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab import compiled

ROOT = Path(__file__).resolve().parents[2]


def require_build() -> None:
    """Fail in CI (./dev test builds the compiled modules), skip elsewhere, when there is no build."""
    if not (compiled._target() / compiled.MANIFEST).exists():  # .native/, or the build REBALANCE_LAB_COMPILED names
        if os.environ.get("CI") == "true":
            pytest.fail("./dev test builds the compiled modules: none in .native/")
        pytest.skip("no compiled build here (python -m rebalance_lab.compiled build)")


def run_script(script: str, *args: str, python_only: bool = False, timeout: float = 120) -> Any:
    """``script`` run by ``python -c`` from the project's root: the JSON of its last line of output."""
    env = dict(os.environ)
    if python_only:
        env[compiled.ENV] = "0"
    elif env.get(compiled.ENV) == "0":  # the build asked for (a directory named there is kept)
        del env[compiled.ENV]
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=timeout, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])
