"""The "rebalance-lab" section of a failed test's report: each group's generations and the last narration.

A failing test usually shows only a TimeoutError from ``wait_for_group``; what the coordinator did
(who joined which generation, which protocol won, who got which partitions, who left or expired) is
what explains it. The section is built from the emulator's generation history (the toolkit's
:class:`~rebalance_lab.control.views.GenerationHistory`) and the narration tail the plugin keeps.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.api import AnyGroupView, ConsumerGroupView, Emulator
from rebalance_lab.observe.narrator import short

SECTION = "rebalance-lab"
GROUPS_SHOWN = 10  # the newest groups' generations are what a failure needs; a session emulator may hold many
GENERATIONS_SHOWN = 8  # per group, the newest


def section_text(emulators: dict[str, Emulator]) -> str:
    """The section for the emulators a test used, by fixture name."""
    return "\n".join(_emulator_text(name, emulator) for name, emulator in emulators.items())


def _emulator_text(fixture: str, emulator: Emulator) -> str:
    lines = [f"{fixture}: {emulator!r}"]
    if not emulator.running:
        return lines[0]
    try:
        lines.extend(_groups_text(emulator))
        narration = emulator.recent_narration()
    except Exception as exc:  # a report must never fail because the emulator could not be read
        return "\n".join([*lines, f"  (could not read the emulator: {exc!r})"])
    if fixture == "rebalance_lab_session":
        lines.append("  (the session emulator is shared: groups and narration of earlier tests are included)")
    lines.append(f"last {len(narration)} narration lines:" if narration else "no narration yet")
    lines.extend(f"  {line}" for line in narration)
    return "\n".join(lines)


def _groups_text(emulator: Emulator) -> list[str]:
    groups = emulator.groups()
    if not groups:
        return ["no groups"]
    lines = [] if len(groups) <= GROUPS_SHOWN else [f"{len(groups)} groups; the last {GROUPS_SHOWN} shown"]
    for view in groups[-GROUPS_SHOWN:]:
        lines.append(f"group {view.group_id!r}: {_state(view)}")
        history = emulator.history(view.group_id)
        dropped = len(history) - GENERATIONS_SHOWN + history.dropped
        if dropped > 0:
            lines.append(f"  ({dropped} older generations not shown)")
        lines.extend(f"  {_entry(entry)}" for entry in history[-GENERATIONS_SHOWN:])
    return lines


def _state(view: AnyGroupView) -> str:
    if isinstance(view, ConsumerGroupView):
        return f"consumer group, state {view.state}, epoch {view.group_epoch}, {len(view.members)} member(s)"
    members = ", ".join(short(m) for m in view.member_ids) or "none"
    return (f"state {view.state}, generation {view.generation_id}, protocol {view.protocol_name}, "
            f"leader {short(view.leader_id)}, members {members}")


def _entry(entry: dict[str, Any]) -> str:
    if entry.get("type") == "consumer":
        target = entry.get("target")
        stable = "stable" if entry.get("stable_ms") is not None else "reconciling"
        return (f"epoch {entry['epoch']} ({entry.get('reason')}, {stable}): assignor {entry.get('assignor')}, "
                f"target {_assignments(target)}")
    votes = entry.get("votes") or {}
    members = entry.get("members") or []
    tally = f", {len(votes)} vote(s)" if votes else ""
    return (f"generation {entry['generation']}: protocol {entry.get('protocol')}{tally}, leader "
            f"{short(entry.get('leader'))}, {len(members)} member(s); "
            f"assignments {_assignments(entry.get('assignments'))}")


def _assignments(by_member: dict[str, Any] | None) -> str:
    if by_member is None:
        return "not stored yet"
    if not by_member:
        return "none"
    return "; ".join(f"{short(member)} -> {_partitions(rows)}" for member, rows in by_member.items())


def _partitions(rows: list[dict[str, Any]] | None) -> str:
    if rows is None:
        return "(not a consumer assignment)"
    by_topic: dict[str, list[int]] = {}
    for row in rows:
        by_topic.setdefault(str(row["topic"]), []).append(int(row["partition"]))
    return " ".join(f"{topic}{parts}" for topic, parts in by_topic.items()) or "nothing"
