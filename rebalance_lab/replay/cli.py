"""``rebalance-lab replay``: rebuild groups' rebalance history from evidence, on Spark, and ask "what if".

Every argument is checked before Spark starts (a JVM start costs seconds): inputs
that name no file, an unknown time zone, assignor or format, an output directory
that cannot be written, and a master that is no Spark master URL all end with one
line on stderr and exit code 2. ``python -m rebalance_lab.replay`` takes the same
arguments (plus ``--input``/``--output`` spellings) and also runs under
``spark-submit``, which then supplies the master (spec §6.6).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rebalance_lab.replay.inputs import InputError, expand_inputs

EXIT_USAGE = 2
EXIT_FAILED = 1

FORMAT_CHOICES = ("auto", "emulator", "broker-log", "dump-log", "console-json", "client-log")
ASSIGNOR_CHOICES = ("range", "roundrobin", "sticky", "cooperative-sticky")
DEFAULT_OUT = "replay-out"
DEFAULT_MASTER = "local[*]"

_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]")
_URL_MASTER = re.compile(r"(spark|mesos|k8s|sc)://\S+|yarn")


class UsageError(ValueError):
    """A bad argument, found before Spark starts."""


def whatif_choices() -> tuple[str, ...]:
    """Our assignors, each also with static membership (``+static``), and ``static`` (the recorded assignor).

    Spelled out here rather than read from the model, so that building the ``rebalance-lab`` parser does
    not import pyarrow; tests/replay/test_cli.py checks that it equals ``model.WHATIF_MODES`` plus the
    assignors."""
    return (*ASSIGNOR_CHOICES, "static", *(f"{name}+static" for name in ASSIGNOR_CHOICES))


def add_arguments(parser: argparse.ArgumentParser, *, inputs_required: bool = True) -> None:
    parser.add_argument("inputs", nargs="+" if inputs_required else "*", metavar="INPUT",
                        help="evidence files, directories (every file below) or glob patterns; .gz is fine")
    parser.add_argument("--format", default="auto", choices=FORMAT_CHOICES,
                        help="the inputs' format; auto recognises each file from its first lines "
                        "(default: %(default)s)")
    parser.add_argument("--tz", default="UTC", metavar="ZONE",
                        help="time zone of broker and client log timestamps, which carry none, e.g. "
                        "Europe/Berlin (default: %(default)s)")
    parser.add_argument("--cluster-id", default="default", metavar="ID",
                        help="cluster id for sources that do not name theirs (default: %(default)s)")
    parser.add_argument("--what-if", action="append", default=[], dest="what_if", metavar="ASSIGNOR",
                        choices=whatif_choices(),
                        help="re-run every recorded generation under this assignor and compare; repeatable; "
                        f"one of {', '.join(whatif_choices())}")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help="output directory: one Parquet directory per table, events/, report.html "
                        "(default: %(default)s)")
    parser.add_argument("--master", default=None, metavar="URL",
                        help=f"Spark master URL: local[N], spark://host:port, yarn, k8s://... (default: "
                        f"{DEFAULT_MASTER}, or the master spark-submit was given)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, e.g. spark.executor.memory=4g; repeatable")
    parser.add_argument("--events-jsonl", action="store_true",
                        help="also write the canonical events as JSON Lines (out/events_jsonl/)")
    parser.add_argument("--engine", default="auto", choices=("auto", "local", "spark"),
                        help="local: one Python process; spark: Spark (--master); auto: local for inputs of up "
                        "to 256 MiB, else Spark (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")


def add_replay_parser(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """The ``replay`` subcommand of ``rebalance-lab``; run it with :func:`run_replay`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay", help="rebuild consumer groups' rebalance history from broker/client logs, offsets dumps or "
        "recordings, on Spark, with what-if assignors",
        description="Parse the inputs into canonical events, rebuild every group's generations and rebalance "
        "episodes, compute their metrics and what-if replays, and write Parquet tables plus an HTML report. "
        "Runs on a local Spark by default; --master takes any Spark master URL.",
    )
    add_arguments(parser)
    return parser


# --- checks before Spark ----------------------------------------------------------------------------------------------

def check_tz(tz: str) -> None:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"unknown time zone {tz!r} (use an IANA name such as UTC or Europe/Berlin)") from None


def check_format(fmt: str) -> None:
    if fmt == "auto":
        return
    from rebalance_lab.replay import sources

    sources.load_adapters()  # adapters register themselves as their modules import
    if fmt not in sources.FORMATS:
        known = ", ".join(sorted(sources.FORMATS)) or "none"
        raise UsageError(f"format {fmt!r} has no adapter in this build (available: {known})")


def check_out_dir(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write to output directory {out}: {exc.strerror or exc}") from None
    return path


def check_master(master: str | None) -> None:
    if master is None or _LOCAL_MASTER.fullmatch(master) or _URL_MASTER.fullmatch(master):
        return
    raise UsageError(f"{master!r} is not a Spark master URL (local[N], spark://host:port, yarn, k8s://...)")


def parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf expects KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def resolve_master(master: str | None) -> str | None:
    """The master to ask for: the given one, spark-submit's (None), or local[*]."""
    if master is not None:
        return master
    return None if "PYSPARK_GATEWAY_PORT" in os.environ else DEFAULT_MASTER


def check_java() -> None:
    if os.environ.get("PYSPARK_GATEWAY_PORT") or os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise RuntimeError("Spark needs Java 17 or later: no `java` on PATH and JAVA_HOME is not set")


def validate(args: argparse.Namespace) -> tuple[Path, dict[str, str]]:
    """Every check that needs no Spark (the output directory is created last); raises :class:`UsageError`."""
    try:
        files = expand_inputs(args.inputs)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    check_tz(args.tz)
    check_format(args.format)
    check_master(args.master)
    conf = parse_conf(args.conf)
    args.files = files
    return check_out_dir(args.out), conf


def check_replayable(args: argparse.Namespace) -> int:
    """The inputs' total size; raises :class:`UsageError` when no input holds a rebalance event
    (empty, binary, unrecognised, a broker log without coordinator lines: :mod:`.preflight`)."""
    from rebalance_lab.replay.preflight import scan

    found = scan(args.files, args.format)
    problem = found.problem()
    if problem:
        raise UsageError(problem)
    return found.total_bytes


# --- the run ----------------------------------------------------------------------------------------------------------

def run_replay(args: argparse.Namespace) -> int:
    """Run ``rebalance-lab replay``; 0 on success, 2 for bad arguments, 1 when the run failed."""
    try:
        out, conf = validate(args)
        total_bytes = check_replayable(args)
    except UsageError as exc:
        print(f"rebalance-lab replay: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from rebalance_lab.replay.engine import choose

    engine, why = choose(getattr(args, "engine", "auto"), total_bytes, master=args.master)
    if not args.quiet:
        print(f"rebalance-lab replay: engine {engine} ({why})", file=sys.stderr)
    if engine == "local":
        return _run_local(args, out)
    try:
        check_java()
        from rebalance_lab.replay.spark import build_session, run_spark

        spark = build_session(resolve_master(args.master), conf=conf)
    except Exception as exc:
        print(f"rebalance-lab replay: error: Spark did not start: {_first_lines(exc)}", file=sys.stderr)
        return EXIT_FAILED
    try:
        result = run_spark(spark, args.inputs, fmt=args.format, tz=args.tz, cluster_id=args.cluster_id,
                           whatif=tuple(dict.fromkeys(args.what_if)), out_dir=out,
                           progress=None if args.quiet else sys.stderr, events_jsonl=args.events_jsonl)
    except Exception as exc:
        print(f"rebalance-lab replay: error: the replay failed: {_first_lines(exc)}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        spark.stop()
    if result.parse_report.events == 0:
        print(f"rebalance-lab replay: error: nothing to replay: {result.parse_report.summary()}", file=sys.stderr)
        return EXIT_USAGE
    return _finish(result.summary, result.errors)


def _run_local(args: argparse.Namespace, out: Path) -> int:
    """The single-process engine (:mod:`.engine`): same tables, report and summary as Spark's."""
    from rebalance_lab.replay.engine import run_local_engine
    from rebalance_lab.replay.whatif import WhatIfError

    try:
        result = run_local_engine(args.files, fmt=args.format, tz=args.tz, cluster_id=args.cluster_id,
                                  whatif=tuple(dict.fromkeys(args.what_if)), out_dir=out.resolve(),
                                  events_jsonl=args.events_jsonl, inputs=args.inputs)
    except WhatIfError as exc:
        print(f"rebalance-lab replay: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        print(f"rebalance-lab replay: error: the replay failed: {_first_lines(exc)}", file=sys.stderr)
        return EXIT_FAILED
    if result.events == 0:
        print("rebalance-lab replay: error: nothing to replay: no input holds a rebalance event", file=sys.stderr)
        return EXIT_USAGE
    return _finish(result.summary, result.errors)


def _finish(summary: str, errors: Sequence[Mapping[str, Any]]) -> int:
    """Print the run's summary (either engine); a group that could not be replayed makes the exit status 1."""
    print(summary)
    if errors:
        print(f"rebalance-lab replay: {len(errors)} group(s) could not be replayed, e.g. "
              f"{errors[0]['group_id']}: {errors[0]['error']}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _first_lines(exc: BaseException, count: int = 5) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()][:count]
    return f"{type(exc).__name__}: " + "\n  ".join(lines)


def build_parser(prog: str = "rebalance-lab replay") -> argparse.ArgumentParser:
    """A stand-alone parser (``python -m rebalance_lab.replay``): inputs positional or ``--input``."""
    parser = argparse.ArgumentParser(prog=prog, description="Replay consumer groups' rebalances on Spark.")
    add_arguments(parser, inputs_required=False)
    parser.add_argument("--input", action="append", default=[], dest="more_inputs", metavar="INPUT",
                        help="an input, as the positional INPUTs (the spark-submit spelling); repeatable")
    parser.add_argument("--output", dest="out", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m rebalance_lab.replay") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    args.inputs = [*args.inputs, *args.more_inputs]
    if not args.inputs:
        parser.error("give at least one INPUT (or --input)")
    return run_replay(args)
