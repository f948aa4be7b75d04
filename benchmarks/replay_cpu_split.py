"""Where the single-process replay's CPU goes, per stage, in CPU-seconds and microseconds per event (issue 20).

    python benchmarks/replay_cpu_split.py                                  # 100,000 events, 1,000 groups
    python benchmarks/replay_cpu_split.py --runs 3 --compare /tmp/before   # alternately with another checkout

The inputs are :mod:`replay_scale`'s (the same generator, rendered broker logs and offsets dumps,
kept in ``--work`` and reused). Each run parses them (``local.parse_inputs`` + ``split_groups``) and
replays every group with one what-if (``local.replay_all``) in a fresh interpreter, the cyclic garbage
collector off for each phase as :func:`~rebalance_lab.replay.local.run_local` has it, timing a few
coarse functions with ``time.process_time`` (a cost the load does not inflate as it does wall
time): the assignor (every port's ``assign_lists``), the what-if's subscriptions, the rest of the
what-if (rounds, moves, rows), the fold of the timeline, the partition moves, and what the model
does besides. The split is exclusive: the stages add up to the replay. cProfile is not used: it
inflates call-heavy code several times and so misplaces the shares. The timing is coarse on purpose:
a clock read costs ~3 us of CPU here (about 0.3 CPU-s over the ~45,000 timed calls of 100,000
events, counted in the caller's stage), and finer brackets measured costs that vanished when the
code they bracketed was taken out (the what-if's regrouping of each member's list, for one).

It answers how far a stage can take the replay: a stage of share s made free leaves ``1 - s``. With
``--compare PATH`` each run alternates between this checkout and the one at PATH (a ``git worktree``
of the commit before a change), so a burst of load hits both; figures from a shared machine are noisy: the load
average is printed beside them.

The compiled build (:mod:`rebalance_lab.compiled`) compiles the model with its steps, which then call each other
natively, past the wrappers: the split is of the pure Python (the children run with ``REBALANCE_LAB_COMPILED=0``);
``--compiled`` runs the build instead and prints the parse and the replay as wholes.

``--write`` also times the single-process runner's output (``local.write_tables``: every table and the events
as Parquet, into a temporary directory), which the Spark tasks' part files pay for their shares too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent

#: Exclusive stages, in print order; "model" is the replay minus the others.
STAGES = ("assignor", "subscriptions", "what-if rest", "fold", "partition moves", "model")


@contextmanager
def _timed(owner: Any, name: str, into: defaultdict[str, float], label: str) -> Iterator[None]:
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            into[label] += time.process_time() - started

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def measure(files: list[str], whatif: str, write: bool = False) -> dict[str, Any]:
    """One parse and replay in this interpreter: CPU-seconds per stage, events and groups; with ``write``, the
    CPU-seconds of writing the tables and events as the single-process runner does (``local.write_tables``)."""
    import tempfile
    from contextlib import ExitStack

    from rebalance_lab.clients.assignors import AbstractStickyAssignor, RangeAssignor, RoundRobinAssignor
    from rebalance_lab.replay import local, model
    from rebalance_lab.replay import whatif as whatif_module
    from rebalance_lab.replay.diagnostics import ParseReport
    from rebalance_lab.replay.gcpolicy import batch_gc

    started = time.process_time()
    context: dict[str, Any] = {"tz": "UTC", "cluster_id": "default", "broker_id": None, "options": {}}
    with batch_gc():  # as run_local does: the cyclic collector off for each phase
        parsed = local.parse_inputs(files, "auto", context, ParseReport())
        groups, topics = local.split_groups(parsed)
    parse_s = time.process_time() - started
    spent: defaultdict[str, float] = defaultdict(float)  # CPU-seconds by stage
    with ExitStack() as stack:
        stack.enter_context(batch_gc())
        for cls in (AbstractStickyAssignor, RangeAssignor, RoundRobinAssignor):
            stack.enter_context(_timed(cls, "assign_lists", spent, "assignor"))
        stack.enter_context(_timed(whatif_module.Chain, "subscriptions", spent, "subscriptions"))
        stack.enter_context(_timed(model, "whatif_rows", spent, "what-if"))
        stack.enter_context(_timed(model, "fold", spent, "fold"))
        stack.enter_context(_timed(model, "transitions", spent, "partition moves"))
        started = time.process_time()
        rows, errors = local.replay_all(groups, topics, (whatif,), None)
        replay_s = time.process_time() - started
    write_s = None
    if write:
        with tempfile.TemporaryDirectory(prefix="replay-cpu-split-") as out_dir:
            started = time.process_time()
            local.write_tables(Path(out_dir), rows, parsed)
            write_s = time.process_time() - started
    if not model.__file__.endswith(".py"):  # compiled: the model's calls into its steps were not wrapped
        spent.clear()
    stages: dict[str, float] = {"assignor": spent["assignor"], "subscriptions": spent["subscriptions"],
              "what-if rest": spent["what-if"] - spent["assignor"] - spent["subscriptions"],
              "fold": spent["fold"], "partition moves": spent["partition moves"]}
    stages["model"] = replay_s - sum(stages.values())
    import rebalance_lab
    from rebalance_lab import compiled

    return {"package": f"{Path(rebalance_lab.__file__).parent}, compiled modules {compiled.status()}", "parse": parse_s,
            "replay": replay_s, "write": write_s, "stages": stages, "events": len(parsed), "groups": len(groups),
            "errors": len(errors)}


def _child(args: argparse.Namespace) -> int:
    files = json.loads(Path(args.files).read_text())
    print(json.dumps(measure(files, args.whatif, args.write)))
    return 0


def _run_in(checkout: Path, files_list: Path, whatif: str, compiled: bool, write: bool) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter importing ``rebalance_lab`` from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    if not compiled:
        env["REBALANCE_LAB_COMPILED"] = "0"
    result = subprocess.run([sys.executable, __file__, "--child", "--files", str(files_list), "--whatif", whatif,
                             *(["--write"] if write else [])],
                            capture_output=True, text=True, env=env, cwd=checkout, check=False)
    if result.returncode != 0:
        raise SystemExit(f"the run in {checkout} failed:\n{result.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _print_run(label: str, run: dict[str, Any]) -> None:
    events, replay = run["events"], run["replay"]
    print(f"{label}: parse {run['parse']:.2f} CPU-s ({run['parse'] / events * 1e6:.0f} us/event), replay "
          f"{replay:.2f} CPU-s ({replay / events * 1e6:.0f} us/event), {run['groups']:,} groups, "
          f"{run['errors']} failed ({_load()}; {run['package']})")
    if run["write"] is not None:
        print(f"    write {run['write']:.2f} CPU-s ({run['write'] / events * 1e6:.0f} us/event)")
    if run["stages"]["model"] == replay:
        return  # compiled: not timed apart
    for stage in STAGES:
        seconds = run["stages"][stage]
        print(f"    {stage:<16} {seconds:7.2f} CPU-s  {seconds / replay * 100:5.1f}%  "
              f"{seconds / events * 1e6:6.1f} us/event")


def _summary(label: str, runs: list[dict[str, Any]]) -> None:
    replay = [r["replay"] for r in runs]
    parse = [r["parse"] for r in runs]
    print(f"{label}: replay median {statistics.median(replay):.2f} CPU-s (min {min(replay):.2f}, max "
          f"{max(replay):.2f}), parse median {statistics.median(parse):.2f} CPU-s over {len(runs)} runs")
    if all(r["write"] is not None for r in runs):
        write = [r["write"] for r in runs]
        print(f"    write median {statistics.median(write):.2f} CPU-s (min {min(write):.2f}, max {max(write):.2f})")
    if all(r["stages"]["model"] == r["replay"] for r in runs):
        return
    for stage in STAGES:
        share = statistics.median(r["stages"][stage] / r["replay"] for r in runs)
        print(f"    {stage:<16} median share {share * 100:5.1f}%: made free, the replay would need "
              f"{(1 - share) * 100:.0f}% of its CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--whatif", default="cooperative-sticky", help="the what-if (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--compare", type=Path, default=None, help="another checkout, measured alternately")
    parser.add_argument("--compiled", action="store_true",
                        help="run the compiled build where fresh (the replay as a whole: no split)")
    parser.add_argument("--write", action="store_true",
                        help="also write the tables and events as the single-process runner does (CPU-s apart)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--files", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)
    sys.path.insert(0, str(BENCHMARKS))
    sys.path.insert(0, str(REPO))
    import replay_scale  # the generator and writer of the replay benchmark's inputs

    work = args.work or Path("/tmp/rebalance-lab-replay-split") / f"{args.events}-{args.groups}-{args.seed}"
    files, _ = replay_scale.write_inputs(work, args.events, args.groups, args.seed, "rendered")
    files_list = work / "files.json"
    files_list.write_text(json.dumps([str(f) for f in files]))
    checkouts: list[tuple[str, Path]] = [("this checkout", REPO)]
    if args.compare is not None:
        checkouts.append((f"@{args.compare}", args.compare.resolve()))
    results: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in checkouts}
    for number in range(1, args.runs + 1):
        for label, checkout in checkouts:
            run = _run_in(checkout, files_list, args.whatif, args.compiled, args.write)
            results[label].append(run)
            _print_run(f"run {number} {label}", run)
    for label, runs in results.items():
        _summary(label, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
