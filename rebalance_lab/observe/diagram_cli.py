"""The ``diagram`` subcommand: ``rebalance-lab diagram RECORDING [--group G] [--generation N] [--format F]``.

Reads a recording (``serve --record``; rows of docs/event-schema.md), builds the group's sequence model
(:mod:`.sequence`) and writes it as Mermaid text, SVG or HTML (:mod:`.diagram`). A recording that cannot be
read, a group or generation it does not hold: a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rebalance_lab.observe.diagram import FORMATS, render
from rebalance_lab.observe.sequence import Generation, GroupSequence, build

EXIT_USAGE = 2


class DiagramError(ValueError):
    """The recording, group or generation asked for cannot be drawn."""


def add_diagram_parser(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "diagram", help="draw a recording's rebalances as sequence diagrams (Mermaid, SVG or HTML)",
        description="Draw the JoinGroup/SyncGroup/Heartbeat/LeaveGroup exchanges (ConsumerGroupHeartbeat for "
        "KIP-848 groups) of a recording (serve --record) as a sequence diagram, one band per generation. "
        "Exit status: 0 written, 2 usage or input error.",
    )
    parser.add_argument("recording", metavar="RECORDING.jsonl", help="a recording (JSON Lines, rbl-event/1)")
    parser.add_argument("--group", metavar="G", help="the group to draw (needed when the recording has several)")
    parser.add_argument("--generation", type=int, metavar="N",
                        help="only this generation (a consumer group's group epoch); default: all")
    parser.add_argument("--format", choices=FORMATS, default="mermaid", help="default: %(default)s")
    parser.add_argument("--out", metavar="FILE", default="-", help="where to write; - (default) for standard output")
    return parser


def diagram(rows: list[dict[str, Any]], group: str | None, generation: int | None, fmt: str) -> str:
    sequences = {g: s for g, s in build(rows).items() if s.generations}
    sequence = _pick_group(sequences, group)
    return render(sequence, _pick_generations(sequence, generation), fmt)


def _pick_group(sequences: dict[str, GroupSequence], group: str | None) -> GroupSequence:
    names = ", ".join(sorted(sequences)) or "none"
    if group is None:
        if len(sequences) != 1:
            raise DiagramError(f"choose a group with --group; the recording has: {names}")
        return next(iter(sequences.values()))
    if group not in sequences:
        raise DiagramError(f"no group {group!r} in the recording; it has: {names}")
    return sequences[group]


def _pick_generations(sequence: GroupSequence, number: int | None) -> list[Generation]:
    if number is None:
        return sequence.generations
    chosen = sequence.generation(number)
    if chosen is None:
        known = ", ".join(str(g.number) for g in sequence.generations)
        raise DiagramError(f"group {sequence.group_id!r} has no generation {number}; it has: {known}")
    return [chosen]


def run_diagram(args: argparse.Namespace) -> int:
    from rebalance_lab.observe.export import ExportError, read_events  # imports every format: only when needed

    try:
        text = diagram(read_events(args.recording), args.group, args.generation, args.format)
        if args.out == "-":
            sys.stdout.write(text)
        else:
            Path(args.out).write_text(text, encoding="utf-8")
    except (ExportError, DiagramError) as exc:
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"rebalance-lab: error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0
