"""Replays the fuzz cases in one process, compiled or pure (``REBALANCE_LAB_COMPILED=0``), and prints per case
what it produced: ``python -m tests.unit.replay.compiled_fuzz_worker CASES.json`` prints one JSON line, the
build's status then each case's digests of events, diagnostics, tables and group errors, and any exception.

The two builds cannot share a process (mypyc's modules load all or none), so test_compiled_fuzz.py runs this
twice and compares the lines. ``--full N`` prints case N's events, report, tables and errors instead.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import traceback
from pathlib import Path
from typing import Any


def _text(value: Any) -> str:
    """A deterministic text of events and rows (dicts in key order, as test_compiled.py compares tables)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_text(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return f"{type(value).__name__}:{value!r}"


#: A case takes ~30 ms; one still running after this has hung (a damaged number taken as a partition count).
CASE_SECONDS = 10


class _Hung(BaseException):  # not an Exception: run_case's handler must not take it for the replay's own error
    pass


def _hung(*_: object) -> None:
    raise _Hung


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """run_case_unguarded, or "raised" if it ran longer than :data:`CASE_SECONDS`."""
    signal.signal(signal.SIGALRM, _hung)
    signal.alarm(CASE_SECONDS)
    try:
        return run_case_unguarded(case)
    except _Hung:
        return {"raised": f"still running after {CASE_SECONDS} s"}
    finally:
        signal.alarm(0)


def run_case_unguarded(case: dict[str, Any]) -> dict[str, Any]:
    """The case's events, report, tables and group errors as texts; "raised" if parsing or replaying raised."""
    from rebalance_lab.replay.diagnostics import ParseReport
    from rebalance_lab.replay.local import parse_inputs, replay_all, split_groups

    report = ParseReport()
    options = {"tz": "UTC", "cluster_id": "default", "broker_id": None, "options": {}}
    out: dict[str, Any] = {}
    try:
        events = parse_inputs(case["files"], "auto", options, report)
        out["events"] = _text(events)
        out["report"] = _text(report.to_dict())
        groups, topics = split_groups(events)
        rows, errors = replay_all(groups, topics, tuple(case["whatif"]), None)
        out["tables"] = _text({name: list(table) for name, table in rows.items()})
        out["errors"] = _text(errors)
        if errors:
            out["raised"] = "replay: " + "; ".join(error["error"] for error in errors)[:2000]
    except Exception as exc:  # what the fuzz test looks for: the parsers and the fold must not raise
        out["raised"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
    return out


def main(argv: list[str]) -> int:
    from rebalance_lab import compiled
    from rebalance_lab.replay import local  # noqa: F401 - activates the build before any case

    cases = json.loads(Path(argv[0]).read_text())
    if argv[1:2] == ["--full"]:
        wanted = int(argv[2])
        print(json.dumps(next(run_case(c) for c in cases if c["id"] == wanted), indent=1))
        return 0
    found = {}
    for case in cases:
        out = run_case(case)
        found[case["id"]] = {key: (value if key == "raised" else hashlib.sha256(value.encode()).hexdigest()[:16])
                             for key, value in out.items()}
    print(json.dumps({"status": compiled.status(), "cases": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
