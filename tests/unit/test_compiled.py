"""The what-if's compiled build (rebalance_lab/compiled.py): loaded only when fresh, and the same tables as Python.

``./dev test`` builds it (``python -m rebalance_lab.compiled build --if-stale``), so in CI the whole suite, the
assignors' Java-equality tests and the replay tests included, runs on the compiled modules; the last test here
replays a generated input both ways and compares every table.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from rebalance_lab import compiled, native
from tests.support.compiled_build import require_build, run_script


def _fake_build(target: Path, sources: dict[str, str]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    (target / "stub.so").write_bytes(b"")
    (target / compiled.MANIFEST).write_text(json.dumps({
        "suffix": native.suffix(), "sources": sources, "files": {"rebalance_lab.replay.whatif": "stub.so"}}))


def test_without_a_build_the_python_modules_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.ENV, raising=False)
    why, files = compiled._usable(tmp_path / "nothing")
    assert why.startswith("absent") and files == {}


def test_a_build_whose_sources_changed_since_is_stale_and_not_loaded(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.ENV, raising=False)
    sources = compiled.source_hashes()
    sources["replay/whatif.py"] = hashlib.sha256(b"an older whatif.py").hexdigest()
    _fake_build(tmp_path, sources)
    why, files = compiled._usable(tmp_path)
    assert why.startswith("stale") and files == {}


def test_a_fresh_build_is_loaded_unless_switched_off_or_its_modules_are_already_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.ENV, raising=False)
    _fake_build(tmp_path, compiled.source_hashes())
    monkeypatch.setattr(sys, "modules", {k: v for k, v in sys.modules.items() if k not in compiled.MODULES})
    assert compiled._usable(tmp_path) == ("compiled", {"rebalance_lab.replay.whatif": tmp_path / "stub.so"})
    monkeypatch.setenv(compiled.ENV, "0")
    assert compiled._usable(tmp_path)[0].startswith("disabled")
    monkeypatch.delenv(compiled.ENV)
    monkeypatch.setitem(sys.modules, "rebalance_lab.replay.whatif", sys)  # imported as Python already
    assert compiled._usable(tmp_path)[0].startswith("not used")


_REPLAY = """
import hashlib, json, sys
sys.path.insert(0, "benchmarks")
import replay_scale
from pathlib import Path
from rebalance_lab import compiled, native
from rebalance_lab.replay.local import run_local
files, _ = replay_scale.write_inputs(Path(sys.argv[1]), 4000, 30, 7, "rendered")
digests = {}
for whatif in ("cooperative-sticky", "sticky", "range", "roundrobin+static"):
    result = run_local([str(f) for f in files], whatif=(whatif,))
    assert not result.errors, result.errors
    for name, rows in sorted(result.tables.items()):
        text = repr([sorted(r.items()) if isinstance(r, dict) else r for r in rows])
        digests[f"{whatif}/{name}"] = hashlib.sha256(text.encode()).hexdigest()
print(json.dumps({"status": compiled.status(), "digests": digests}))
"""


def _replay(work: Path, python_only: bool) -> dict[str, object]:
    found: dict[str, object] = run_script(_REPLAY, str(work), python_only=python_only, timeout=600)
    return found


def test_the_compiled_what_if_writes_the_same_tables_as_the_python_one(tmp_path: Path) -> None:
    require_build()
    with_build = _replay(tmp_path / "inputs", python_only=False)
    python = _replay(tmp_path / "inputs", python_only=True)
    assert with_build["status"] == "compiled", with_build["status"]
    assert python["status"].startswith("disabled")  # type: ignore[attr-defined]
    assert with_build["digests"] == python["digests"]


_ASSIGNOR_HELPERS = """
import json, sys
from rebalance_lab import compiled, native
from rebalance_lab.clients import assignors
from rebalance_lab.clients.assignors import common, sticky_kernel
errors = sys.modules[common.AssignorError.__module__]
from rebalance_lab.clients.assignors.types import ClusterView, GroupSubscription
try:
    assignors.CooperativeStickyAssignor().assign(ClusterView.of_counts({"t": 1}), GroupSubscription({}))
    caught = None
except assignors.AssignorError as exc:
    caught = exc.java_exception
print(json.dumps({"status": compiled.status(), "common": common.__file__, "errors": errors.__file__,
                  "kernel": sticky_kernel.__file__,
                  "one_class": common.AssignorError is assignors.AssignorError is errors.AssignorError,
                  "caught": caught}))
"""


def test_the_assignors_shared_helpers_run_compiled_and_raise_the_one_assignor_error() -> None:
    # common.py's helpers (member order, topic metadata, shared partitions) run in every what-if round: compiled
    # since AssignorError, which mypyc cannot compile (it subclasses RuntimeError), lives in errors.py (issue 20).
    require_build()
    found = run_script(_ASSIGNOR_HELPERS)
    assert found["status"] == "compiled", found["status"]
    assert found["common"].endswith(native.suffix())  # the build's, not common.py
    assert found["kernel"].endswith(native.suffix())  # the sticky what-if rounds' int kernel (issue 20)
    assert found["errors"].endswith("errors.py")  # Python: the class mypyc cannot compile
    assert found["one_class"] and found["caught"] == "ArithmeticException"
