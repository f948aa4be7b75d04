"""What the given evidence can answer, and which file would fill each gap (issue 20 item 5).

The knowledge is :mod:`rebalance_lab.replay.coverage`'s (established on real brokers); this module
only renders it for the run's sources: one row per answer with its level (measured, estimated,
partial, unknown), the sources that give it, and what to add.
"""

from __future__ import annotations

from rebalance_lab.replay import coverage
from rebalance_lab.replay.report.data import Summary
from rebalance_lab.replay.report.html import Cell, note, section, table


def evidence_section(summary: Summary) -> str:
    if not summary.sources:
        return section("evidence", "What the evidence can answer", note("No source was recognised."))
    names = ", ".join(coverage.SOURCE_LABELS.get(s, s) for s in summary.sources)
    rows = [[Cell(c.label), Cell(c.level, cls=f"level-{c.level}"),
             Cell(", ".join(coverage.SOURCE_LABELS.get(s, s) for s in c.sources)), Cell(c.hint or "")]
            for c in coverage.coverage(summary.sources)]
    intro = note(f"Replayed from: {names}. What each answer rests on; where it falls short of measured, the file "
                 "that would fill the gap.")
    return section("evidence", "What the evidence can answer",
                   intro + table(["answer", "level", "from", "to fill the gap"], rows))


def gap_lines(summary: Summary) -> list[str]:
    """The terminal's lines for answers short of measured, one per file to add: ``  <answers>: <hint>``."""
    by_hint: dict[str, list[str]] = {}
    for c in coverage.coverage(summary.sources) if summary.sources else ():
        if c.hint:
            by_hint.setdefault(c.hint, []).append(f"{c.label} {c.level}")
    return [f"  {', '.join(answers)}: {hint}" for hint, answers in by_hint.items()]
