"""Compare a batch against the oracle and fail with replayable cases."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.differential_java.python_side import outcomes_match
from tests.differential_java.shrink import shrink_case
from tests.java_oracle import JavaOracle, OracleError, minimal_case_json

_SHOWN = 3


def _render(value: Any) -> str:
    if isinstance(value, OracleError):
        return f"Java threw {value}"
    if isinstance(value, Exception):
        return f"Python raised {type(value).__name__}: {value}"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def check_against_java(
    oracle: JavaOracle, cases: Sequence[dict[str, Any]], python: Callable[[dict[str, Any]], Any]
) -> None:
    """Run ``cases`` on both sides; fail listing the first mismatches as replayable JSON."""
    java_results = oracle.run_many(cases)
    mismatches = []
    for case, java in zip(cases, java_results, strict=True):
        mine = _outcome(python, case)
        if not outcomes_match(java, mine):
            mismatches.append((case, java, mine))
    if mismatches:
        lines = [f"{len(mismatches)} of {len(cases)} cases differ from Kafka's Java code; first {_SHOWN}:"]
        for case, java, mine in mismatches[:_SHOWN]:
            lines += [f"case:   {minimal_case_json(case)}", f"java:   {_render(java)}", f"python: {_render(mine)}", ""]
        small = shrink_case(mismatches[0][0], lambda c: not _agrees(oracle, c, python))
        if small is not mismatches[0][0]:
            java = oracle.run_many([small])[0]
            lines += [
                "first case shrunk:",
                f"case:   {minimal_case_json(small)}",
                f"java:   {_render(java)}",
                f"python: {_render(_outcome(python, small))}",
            ]
        pytest.fail("\n".join(lines), pytrace=False)


def _outcome(python: Callable[[dict[str, Any]], Any], case: dict[str, Any]) -> Any:
    try:
        return python(case)
    except Exception as exc:  # an outcome like any other
        return exc


def _agrees(oracle: JavaOracle, case: dict[str, Any], python: Callable[[dict[str, Any]], Any]) -> bool:
    return outcomes_match(oracle.run_many([case])[0], _outcome(python, case))
