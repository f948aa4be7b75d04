"""Normalised transcripts: what a scenario observed, comparable across brokers.

Entries are grouped by the step that collected them and, inside a step, ordered by the
member order written in the step -- never by arrival time -- so two runs against
different brokers give the same text whenever the brokers behaved the same.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import yaml

ANSWERED, PARKED, UNANSWERED, CLOSED, TIMED_OUT = "answered", "parked", "unanswered", "connection closed", "timeout"


@dataclass
class Entry:
    who: str  # member alias, or "admin"
    api: str
    version: int
    outcome: str = ANSWERED
    fields: dict[str, Any] = field(default_factory=dict)  # the normalised response
    # the decoded response, kept until the run ends: ids are aliased only once every
    # member's ids are known, so one id reads the same in every entry
    raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    sort_topics: bool = field(default=False, repr=False, compare=False)

    def lines(self) -> list[str]:
        head = f"  {self.who}: {self.api} v{self.version}"
        if self.outcome != ANSWERED:
            return [f"{head} -> {self.outcome}"]
        body = yaml.safe_dump(self.fields, sort_keys=False, default_flow_style=False, width=100).rstrip("\n")
        return [head, *("    " + line for line in body.splitlines())]

    def to_dict(self) -> dict[str, Any]:
        return {"who": self.who, "api": self.api, "version": self.version, "outcome": self.outcome,
                **({"response": self.fields} if self.outcome == ANSWERED else {})}


@dataclass
class StepRecord:
    index: int
    label: str
    entries: list[Entry] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"step {self.index}: {self.label}"]
        for entry in self.entries:
            out.extend(entry.lines())
        return out


@dataclass
class Transcript:
    scenario: str
    target: str
    steps: list[StepRecord] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # unmet "expect" clauses; not part of lines()

    @property
    def ok(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        out = [f"scenario: {self.scenario}"]
        for step in self.steps:
            out.extend(step.lines())
        return out

    def text(self) -> str:
        return "\n".join(self.lines()) + "\n"

    def entries(self, api: str | None = None) -> list[Entry]:
        return [e for s in self.steps for e in s.entries if api is None or e.api == api]

    def step(self, index: int) -> StepRecord:
        return self.steps[index - 1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "steps": [{"step": s.index, "action": s.label, "entries": [e.to_dict() for e in s.entries]}
                      for s in self.steps],
            "failures": list(self.failures),
        }


def diff_transcripts(a: Transcript, b: Transcript) -> list[str]:
    """A unified diff of the two transcripts' text; empty when they agree."""
    return list(difflib.unified_diff(a.lines(), b.lines(), fromfile=a.target, tofile=b.target, lineterm=""))
