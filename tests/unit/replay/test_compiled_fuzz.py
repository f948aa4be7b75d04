"""The compiled replay (mypyc: the broker-log and dump-log parsers, the fold, the model, the what-if) reads damaged
input exactly as the pure Python does, and neither raises (issue 20; the README: bad lines are never fatal).

A compiled module raises TypeError where a value does not match its annotation and Python would have carried
on, so a damaged line the other tests do not cover could drop a group compiled that the pure replay keeps.
Here the real captured samples are damaged by a seeded mutator (compiled_fuzz_damage.py: truncated lines,
swapped and deleted fields, non-numeric, huge and negative numbers, JSON values of the wrong type, empty
strings, non-UTF-8 and NUL bytes, duplicated, reordered and very long lines) and replayed by
compiled_fuzz_worker.py twice, with the build and with ``REBALANCE_LAB_COMPILED=0``: the events, the
diagnostics, every table and the group errors must be the same, and nothing may raise.

``REBALANCE_LAB_FUZZ_CASES`` (default 400) and ``REBALANCE_LAB_FUZZ_SEED`` (default 20) set a longer or another
run; a failure names the seed and case, and ``python -m tests.unit.replay.compiled_fuzz_worker CASES.json --full N``
shows one case's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab import compiled
from tests.unit.replay.compiled_fuzz_damage import write_case

ROOT = Path(__file__).resolve().parents[3]
CASES = int(os.environ.get("REBALANCE_LAB_FUZZ_CASES", "400"))
SEED = int(os.environ.get("REBALANCE_LAB_FUZZ_SEED", "20"))


def _require_build() -> None:
    if not (compiled._target() / compiled.MANIFEST).exists():  # as test_compiled.py: CI builds it
        if os.environ.get("CI") == "true":
            pytest.fail("./dev test builds the compiled modules: none in .native/")
        pytest.skip("no compiled build here (python -m rebalance_lab.compiled build)")
    if os.environ.get("CI") != "true" and compiled.source_hashes() != json.loads(
            (compiled._target() / compiled.MANIFEST).read_text()).get("sources"):
        pytest.skip("the compiled build is stale (python -m rebalance_lab.compiled build)")  # CI builds afresh


def _run(cases_file: Path, python_only: bool) -> dict[str, Any]:
    env = dict(os.environ)
    if python_only:
        env[compiled.ENV] = "0"
    result = subprocess.run([sys.executable, "-m", "tests.unit.replay.compiled_fuzz_worker", str(cases_file)],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found


def compare(cases: list[dict[str, Any]], folder: Path) -> list[str]:
    """Each case where the build and the pure Python differ, or either raised, described."""
    cases_file = folder / "cases.json"
    cases_file.write_text(json.dumps(cases))
    built, pure = _run(cases_file, python_only=False), _run(cases_file, python_only=True)
    assert built["status"] == "compiled", built["status"]
    assert pure["status"].startswith("disabled"), pure["status"]
    problems = []
    for case in cases:
        got, want = built["cases"][str(case["id"])], pure["cases"][str(case["id"])]
        what = f"case {case['id']} (seed {SEED}) {case['sample']} {case['damage']}"
        if got != want:
            differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            problems.append(f"{what}: compiled and pure differ in {differ}: {got.get('raised') or want.get('raised')}")
        elif "raised" in got:
            problems.append(f"{what}: raised {got['raised']}")
    return problems


def test_damaged_real_samples_replay_the_same_compiled_and_pure_and_nothing_raises(tmp_path: Path) -> None:
    _require_build()
    cases = [write_case(SEED, number, tmp_path / "inputs") for number in range(CASES)]
    problems = compare(cases, tmp_path)
    assert not problems, "\n".join(problems[:20])
