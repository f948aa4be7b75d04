"""``expect`` clauses: the error (or outcome) each entry of a step should show.

``expect: NAME`` applies to every entry of the step; ``expect: {a: NAME, admin: NAME}``
to the entries of those senders. An entry's error is its top-level error code if that
is not NONE, else the first non-NONE error code nested in it (a LeaveGroup member, a
described group, a committed partition), else NONE. ``parked`` / ``timeout`` /
``connection closed`` match entries with that outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rebalance_lab.scenarios.model import Step
from rebalance_lab.scenarios.transcript import ANSWERED, Entry, StepRecord


def primary_error(fields: Mapping[str, Any]) -> str:
    top = fields.get("error_code")
    if top not in (None, "NONE"):
        return str(top)
    nested = _first_nested_error(fields)
    return nested if nested is not None else "NONE"


def _first_nested_error(value: Any) -> str | None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key.endswith("error_code") and item not in ("NONE", None):
                return str(item)
            found = _first_nested_error(item)
            if found is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _first_nested_error(item)
            if found is not None:
                return found
    return None


def observed(entry: Entry) -> str:
    return primary_error(entry.fields) if entry.outcome == ANSWERED else entry.outcome


def check_expectations(step: Step, record: StepRecord) -> list[str]:
    expect = step.options.get("expect")
    if expect is None:
        return []
    wanted = dict(expect) if isinstance(expect, Mapping) else None
    failures = []
    for entry in record.entries:
        target = str(expect) if wanted is None else wanted.get(entry.who)
        if target is None:
            continue
        got = observed(entry)
        if got != str(target):
            failures.append(f"step {record.index} ({record.label}): {entry.who} {entry.api} "
                            f"expected {target}, got {got}")
    if wanted is not None:
        missing = set(wanted) - {e.who for e in record.entries}
        failures.extend(f"step {record.index} ({record.label}): no entry for {who}" for who in sorted(missing))
    return failures
