"""Which engine replays (``replay --engine auto|local|spark``) and the local engine's whole run (issue 20 item 3).

Spark costs a JVM start and a job set-up of 10-25 s before the first event is read, and then
replays about 1.6x faster than one Python process on two cores; the single-process runner
(:mod:`rebalance_lab.replay.local`) starts at once. ``auto`` therefore replays an input of up to
:data:`LOCAL_MAX_BYTES` in the single process (the demo recording: about 0.3 s against 25-45 s on
Spark) and anything larger on Spark. The threshold was measured on this project's 2-core machine
under load: the single-process runner replayed 50,000 events of benchmarks/replay_scale.py's
rendered broker logs and dumps (48.7 MB) in 8.3 s (5.8 MB/s, one what-if), while Spark took 21 s
of parse+replay and 54 s in all for an input with no event at all; Spark's 1.6x faster replay
pays off its start only once the single process would run for a minute or more, about 300 MB,
so 256 MiB keeps every local run under about 45 s. Given ``--master`` (a cluster) or run under ``spark-submit``,
``auto`` means Spark.

Both engines write the same tables (tests/replay/test_pipeline.py checks them equal), the report
and the terminal summary; :func:`run_local_engine` is the local side of the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENGINES = ("auto", "local", "spark")
#: ``auto`` replays inputs of at most this many bytes in the single process.
LOCAL_MAX_BYTES = 256 * 1024 * 1024


def choose(engine: str, total_bytes: int, *, master: str | None) -> tuple[str, str]:
    """(``local`` or ``spark``, why) for the asked ``engine`` and the inputs' size."""
    if engine != "auto":
        return engine, "asked for"
    if master is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return "spark", "a Spark master was given"
    size = f"{total_bytes / 1e6:.1f} MB of input"
    if total_bytes <= LOCAL_MAX_BYTES:
        return "local", f"auto: {size}, at most {LOCAL_MAX_BYTES // (1024 * 1024)} MiB"
    return "spark", f"auto: {size}, over {LOCAL_MAX_BYTES // (1024 * 1024)} MiB"


@dataclass
class LocalOutcome:
    events: int
    errors: list[dict[str, str]]
    summary: str
    report_path: Path | None


#: The tables the report reads (as the Spark runner collects them).
_COLLECTED = ("group_summary", "rebalance_episodes", "group_generations", "whatif_results", "partition_moves")
BUSY_GROUPS = 20  # as rebalance_lab.replay.spark.BUSY_GROUPS: groups whose moves the report draws


def _collected(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    collected = {name: tables.get(name, []) for name in _COLLECTED}
    busy = sorted(collected["group_summary"],
                  key=lambda r: (-(r.get("episodes") or 0), r["cluster_id"], r["group_id"]))[:BUSY_GROUPS]
    keys = {(r["cluster_id"], r["group_id"]) for r in busy}
    collected["partition_moves"] = [r for r in collected["partition_moves"] if (r["cluster_id"], r["group_id"]) in keys]
    return collected


def run_local_engine(files: Sequence[str], *, fmt: str, tz: str, cluster_id: str, whatif: Sequence[str],
                     out_dir: Path, events_jsonl: bool, inputs: Sequence[str]) -> LocalOutcome:
    """Replay ``files`` in this process and write the tables, the report and (``events_jsonl``) the events.

    All of it runs with the cyclic collector off (:func:`~.gcpolicy.batch_gc`), as ``run_local`` and the Spark
    tasks do: it once ran with it on, and at 1e5 events 15% of the run's CPU went to ~3,000 collections walking
    the parsed events (5% when only the report ran with it on). The report leaves a few objects in cycles (the
    json module's encoder closures: 33, for a sample's two groups as for 10,000), collected after the block."""
    from rebalance_lab.replay.gcpolicy import batch_gc

    with batch_gc():
        return _replay_and_report(files, fmt=fmt, tz=tz, cluster_id=cluster_id, whatif=whatif, out_dir=out_dir,
                                  events_jsonl=events_jsonl, inputs=inputs)


def _replay_and_report(files: Sequence[str], *, fmt: str, tz: str, cluster_id: str, whatif: Sequence[str],
                       out_dir: Path, events_jsonl: bool, inputs: Sequence[str]) -> LocalOutcome:
    from rebalance_lab.replay.diagnostics import ParseReport
    from rebalance_lab.replay.event_rows import write_jsonl
    from rebalance_lab.replay.local import parse_inputs, replay_and_write, split_groups
    from rebalance_lab.replay.report import summarize, terminal_summary, write_report

    report = ParseReport()
    parsed = parse_inputs(files, fmt, {"tz": tz, "cluster_id": cluster_id, "broker_id": None, "options": {}}, report)
    if not parsed:
        return LocalOutcome(0, [], "", None)
    groups, topics = split_groups(parsed)
    rows, errors, _ = replay_and_write(groups, topics, parsed, tuple(whatif), None, out_dir)
    if events_jsonl:
        (out_dir / "events_jsonl").mkdir(parents=True, exist_ok=True)
        with (out_dir / "events_jsonl" / "part-0.jsonl").open("w", encoding="utf-8") as stream:
            write_jsonl(parsed, stream)
    collected = _collected(rows)
    meta: dict[str, Any] = {
        "runner": "local", "inputs": list(inputs), "files": len(files), "format": fmt,
        "formats": sorted(report.by_format), "tz": tz, "cluster_id": cluster_id, "whatif_assignors": list(whatif),
        "out_dir": str(out_dir), "errors": errors,
        "counts": {"files": len(files), "events": report.events, **{name: len(r) for name, r in rows.items()}},
        "busy_groups": [list(key) for key in sorted({(r["cluster_id"], r["group_id"])
                                                     for r in collected["partition_moves"]})],
    }
    summary = summarize(collected, meta)  # once, for the page, the headline tables and the terminal
    path = write_report(out_dir, collected, report, meta, summary=summary)
    meta["report"] = str(path)
    return LocalOutcome(report.events, errors, terminal_summary(collected, report, meta, summary=summary), path)
