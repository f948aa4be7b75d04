"""The headline tables as CSV and JSON, for a spreadsheet or a dashboard (issue 20 item 4).

Written next to ``report.html`` by :func:`~rebalance_lab.replay.report.write_report`:

* ``headline_overall.csv``: the actual run and each what-if over every group;
* ``headline_groups.csv``: the same per group, every group (the page lists the busiest only);
* ``headline.json``: both, plus the percentile method and the units.

Units: durations in milliseconds, unavailability in partition-seconds, changes as fractions of
the actual run (-0.67 is 67 % less); an unknown value is empty in CSV and null in JSON.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from rebalance_lab.replay.report import headline
from rebalance_lab.replay.report.data import Summary

COLUMNS = ("scope", "series", "times", "episodes", "paired", "partitions_moved", "partitions_moved_change",
           "revocations", "revocations_change", "stw_p50_ms", "stw_p95_ms", "stw_max_ms",
           "unavailable_partition_s", "unavailable_change")
FILES = ("headline_overall.csv", "headline_groups.csv", "headline.json")


def export_row(line: headline.Line) -> dict[str, object]:
    unavailable = None if line.unavailable_ms is None else round(line.unavailable_ms / 1000, 6)
    return {"scope": line.scope, "series": line.series, "times": line.times, "episodes": line.episodes,
            "paired": line.paired, "partitions_moved": line.moved, "partitions_moved_change": line.moved_change,
            "revocations": line.revocations, "revocations_change": line.revocations_change,
            "stw_p50_ms": line.stw_p50_ms, "stw_p95_ms": line.stw_p95_ms, "stw_max_ms": line.stw_max_ms,
            "unavailable_partition_s": unavailable, "unavailable_change": line.unavailable_change}


def _write_csv(target: Path, rows: Sequence[dict[str, object]]) -> None:
    with target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)


def export_tables(out_dir: Path, summary: Summary) -> list[Path]:
    """Write the three files of :data:`FILES` into ``out_dir`` (created) and return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    overall = [export_row(line) for line in headline.overall(summary)]
    groups = [export_row(line) for line in headline.per_group(summary)]
    paths = [out_dir / name for name in FILES]
    _write_csv(paths[0], overall)
    _write_csv(paths[1], groups)
    document = {"percentile_method": summary.method, "units": {"durations": "ms", "unavailable": "partition·s",
                                                               "changes": "fraction of the actual run"},
                "overall": overall, "groups": groups}
    paths[2].write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths
