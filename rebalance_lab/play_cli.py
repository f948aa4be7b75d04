"""The ``play`` subcommand: ``rebalance-lab play SCENARIO [--flavor F] [--explain] [--step]`` and ``play --list``.

Outside the ``scenarios`` package on purpose: importing that package imports the emulator's server, which
every other command would then pay for at start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from rebalance_lab.config import Flavor

EXIT_USAGE = 2


def add_play_parser(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "play", help="play a packaged scenario on an in-process emulator, narrated (teaching material)",
        description="Play a scenario (a packaged name from --list, or a YAML file; format in "
        "rebalance_lab/scenarios/FORMAT.md) on an in-process emulator with a manual clock: every request and "
        "answer, with the coordinator's narration between them. Exit status: 0 played with every expectation "
        "met, 1 an expectation was not met, 2 usage error or unknown scenario.",
    )
    parser.add_argument("scenario", nargs="?", metavar="SCENARIO", help="a packaged scenario's name or a .yaml file")
    parser.add_argument("--list", action="store_true", help="list the packaged scenarios, one line each")
    parser.add_argument("--flavor", choices=[f.value for f in Flavor],
                        help="the coordinator to play on (default: the scenario's release line, else kafka-4)")
    parser.add_argument("--explain", action="store_true",
                        help="print every answer whole (the narration is always the full explanation)")
    parser.add_argument("--step", action="store_true",
                        help="wait for Enter before each step (end of input: go on without waiting)")
    parser.add_argument("--record", metavar="FILE", help="also write the coordinator's recording (for `diagram`)")
    return parser


def list_lines() -> list[str]:
    from rebalance_lab.scenarios import library

    return [f"{path.stem}: {library.summary(path)}" for path in library.paths()]


def run_play(args: argparse.Namespace) -> int:
    """Imports the scenario machinery only when ``play`` runs, so every other command starts as fast."""
    import yaml

    from rebalance_lab.scenarios import library
    from rebalance_lab.scenarios.loader import load_scenario
    from rebalance_lab.scenarios.model import ScenarioError
    from rebalance_lab.scenarios.play import PlayOptions, play_async

    if args.list:
        sys.stdout.write("".join(line + "\n" for line in list_lines()))
        return 0
    if not args.scenario:
        print("rebalance-lab: error: play needs a SCENARIO (rebalance-lab play --list shows them)", file=sys.stderr)
        return EXIT_USAGE
    try:
        scenario = load_scenario(library.find(args.scenario))
    except (OSError, ScenarioError, ValueError, yaml.YAMLError) as exc:
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    options = PlayOptions(Flavor(args.flavor) if args.flavor else None, args.explain, args.step, args.record)
    try:
        transcript = asyncio.run(play_async(scenario, sys.stdout, options, sys.stdin))
    except ScenarioError as exc:
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `play ... | head`: the reader has seen enough; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0 if transcript.ok else 1
