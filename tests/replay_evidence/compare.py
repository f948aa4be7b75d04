"""The replay of a broker's evidence against the clients' own record: every disagreement, field by field.

:func:`disagreements` replays the given files (``rebalance_lab.replay.local.run_local``) and
compares, per generation the clients saw: the members (by member id), the leader, the protocol,
each member's partitions, and the number of static members; and for the group: the static
rejoins without a rebalance. A field the replay leaves unknown (None) is no disagreement when the
source set cannot answer it (:mod:`rebalance_lab.replay.coverage` says which); a wrong value is
always one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rebalance_lab.replay import coverage
from rebalance_lab.replay.local import run_local
from tests.replay_evidence.scenario import Truth


def replay(files: Sequence[Path], group: str) -> tuple[dict[int, dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """(generation rows by number, the summary row, the episodes) of ``group``."""
    result = run_local([str(f) for f in files])
    generations = {r["generation"]: r for r in result.tables["group_generations"] if r["group_id"] == group}
    summary = next(r for r in result.tables["group_summary"] if r["group_id"] == group)
    episodes = [r for r in result.tables["rebalance_episodes"] if r["group_id"] == group]
    return generations, summary, episodes


def _answers(field: str, sources: Sequence[str]) -> bool:
    return next(c.level for c in coverage.coverage(sources) if c.field == field) != coverage.UNKNOWN


def _members(row: dict[str, Any]) -> dict[str, list[int] | None] | None:
    """Member -> partitions (None: unknown), a static member keyed by its group.instance.id: a log names the new
    member id of a static member's restart nowhere, and the replay keeps the member under its instance id."""
    members = row.get("members")
    if members is None:
        return None
    return {(m.get("group_instance_id") or m["member_id"]): (
        sorted(tp["partition"] for tp in m["assignment"]) if m.get("assignment") is not None else None)
        for m in members}


def _truth_members(want: dict[str, Any]) -> dict[str, list[int]]:
    return {(v["instance_id"] or m): v["partitions"] for m, v in want["members"].items()}


def _generation(number: int, want: dict[str, Any], row: dict[str, Any] | None, sources: Sequence[str]) -> list[str]:
    if row is None:
        return [f"generation {number}: missing"]
    found: list[str] = []
    members = _members(row)
    truth = _truth_members(want)
    if members is None or (not members and truth):
        found.append(f"generation {number}: members unknown, truth {sorted(truth)}")
    elif set(members) != set(truth):
        found.append(f"generation {number}: members {sorted(members)} != truth {sorted(truth)}")
    elif _answers("assignments", sources):
        wrong = {m: (members[m], truth[m]) for m in truth if members[m] != truth[m]}
        if wrong:
            found.append(f"generation {number}: assignments (replay, truth) {wrong}")
    else:
        assigned = {m: p for m, p in members.items() if p is not None}
        if assigned:
            found.append(f"generation {number}: assignments {assigned} from a source set that has none")
    if want["leader"] is not None and row.get("leader_id") != want["leader"]:
        found.append(f"generation {number}: leader {row.get('leader_id')} != truth {want['leader']}")
    if row.get("protocol") != want["protocol"] and (row.get("protocol") is not None or _answers("protocol", sources)):
        found.append(f"generation {number}: protocol {row.get('protocol')} != truth {want['protocol']}")
    n_static = sum(1 for v in want["members"].values() if v["instance_id"])
    if row.get("n_static") != n_static:
        found.append(f"generation {number}: n_static {row.get('n_static')} != truth {n_static}")
    return found


def _triggers(truth: Truth, generations: dict[int, dict[str, Any]], sources: Sequence[str]) -> list[str]:
    """The reason of the first generation the clients completed after each step that starts a rebalance (the
    last step, the group's end, forms a generation nobody completes: the one after the last reported)."""
    if not _answers("triggers", sources):
        return []
    found = []
    for name, at, trigger in truth.steps:
        if trigger is None:
            continue
        after = [r for r in truth.records if r["t"] >= at]
        number = after[0]["generation"] if after else max(truth.generations) + 1
        row = generations.get(number)
        codes = (row or {}).get("trigger_codes") or []
        # A kafka-python leader sometimes rejoins on its own just as the step acts (its metadata snapshot
        # changed; seen on 4.4.0 in a full run): the broker then names that rejoin, the clients' record cannot
        # tell which came first, and the replay is right to say what the broker said.
        if codes[:1] != [trigger] and codes[:1] != ["leader_rejoin"]:
            found.append(f"step {name!r}: generation {number} trigger {codes} != {trigger}")
    return found


def disagreements(files: Sequence[Path], sources: Sequence[str], group: str, truth: Truth) -> list[str]:
    """Every field where the replay of ``files`` (of the canonical ``sources``) contradicts or misses the truth."""
    generations, summary, _ = replay(files, group)
    found: list[str] = []
    for number, want in sorted(truth.generations.items()):
        found.extend(_generation(number, want, generations.get(number), sources))
    found.extend(_triggers(truth, generations, sources))
    rejoins = summary.get("static_rejoins_without_rebalance")
    if rejoins != truth.static_rejoins:
        found.append(f"static_rejoins_without_rebalance {rejoins} != truth {truth.static_rejoins}")
    return found


def load_truth(path: Path) -> Truth:
    """A ``truth.json`` written by :meth:`tests.replay_evidence.capture.Evidence.write`."""
    data = json.loads(path.read_text())
    return Truth({int(k): v for k, v in data["generations"].items()}, data["static_rejoins"],
                 [tuple(step) for step in data["steps"]], data["records"])
