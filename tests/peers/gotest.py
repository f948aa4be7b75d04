"""Outcomes of a ``go test -json`` run (the test2json event stream), per top-level test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

FINAL_ACTIONS = ("pass", "fail", "skip")


@dataclass
class GoTestRun:
    """What each top-level test of a ``go test -json`` stream ended with, and its output for diagnosis."""

    outcomes: dict[str, str] = field(default_factory=dict)  # top-level test -> pass / fail / skip
    failed_subtests: dict[str, list[str]] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)  # every line a test (or its subtests) printed
    package_action: str | None = None  # the package's own pass/fail (fail also when the binary panicked)
    package_output: list[str] = field(default_factory=list)

    def tests_with(self, action: str) -> set[str]:
        return {name for name, outcome in self.outcomes.items() if outcome == action}

    def tail(self, test: str, lines: int = 25) -> str:
        return "".join(self.output.get(test, [])[-lines:])


def parse(stream: str) -> GoTestRun:
    """Reads test2json lines; anything that is not JSON (build output) goes to ``package_output``."""
    run = GoTestRun()
    for line in stream.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            run.package_output.append(line + "\n")
            continue
        _take(run, event)
    return run


def _take(run: GoTestRun, event: dict[str, object]) -> None:
    action, test, text = event.get("Action"), event.get("Test"), event.get("Output")
    if not isinstance(test, str):
        if action in FINAL_ACTIONS:
            run.package_action = str(action)
        elif isinstance(text, str):
            run.package_output.append(text)
        return
    top = test.split("/", 1)[0]
    if action == "output" and isinstance(text, str):
        run.output.setdefault(top, []).append(text)
    elif action in FINAL_ACTIONS and test == top:
        run.outcomes[top] = str(action)
    elif action == "fail":
        run.failed_subtests.setdefault(top, []).append(test)
