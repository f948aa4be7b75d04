"""The differential report: every scenario against the emulator and a real broker, per Kafka line.

    .venv/bin/python benchmarks/differential_report.py [--output docs/differential-report.md] [NAME ...]

For each scenario of ``rebalance_lab/scenarios/library/*.yaml`` and each release line, the scenario runs on an
in-process emulator of the matching flavor (``kafka-4`` for Kafka 4.x, ``kafka-3`` for 3.9.x)
and on a real broker of that line started in Testcontainers (``tests/support/kafka_broker.py``,
the same brokers as ``tests/integration/test_scenarios.py``: one with the test defaults, and one
per distinct set of scenario broker settings). The normalised transcripts must be identical;
the report lists each scenario, what it covers, and per line "same", "known gap" (listed in
``KNOWN_GAPS`` of the test, with its reason) or "DIFFERENT" (a regression, with the diff). It
also says whether the two real brokers answered the scenario differently (a Java vs Scala
coordinator difference the emulator's flavors must reproduce).

Prints the number of scenarios and the total time, and exits 1 if any result is unexpected.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))

from rebalance_lab.config import Flavor  # noqa: E402
from rebalance_lab.scenarios import (  # noqa: E402
    Scenario,
    broker_settings,
    compare_async,
    diff_transcripts,
    load_scenario,
)
from rebalance_lab.scenarios.library import LIBRARY  # noqa: E402
from rebalance_lab.scenarios.transcript import Transcript  # noqa: E402
from tests.integration.test_scenarios import KNOWN_GAPS  # noqa: E402
from tests.support.kafka_broker import BrokerPool, KafkaBroker  # noqa: E402

SCENARIO_DIR = LIBRARY
DEFAULT_OUTPUT = REPO_ROOT / "docs" / "differential-report.md"
LINES = (("4", Flavor.KAFKA_4), ("3", Flavor.KAFKA_3))
# Report sections, by scenario file name prefix (first match wins).
SECTIONS = (
    ("join_", "Join basics"),
    ("kip394_", "KIP-394: MEMBER_ID_REQUIRED and pending members"),
    ("delay_", "Initial rebalance delay"),
    ("trigger_", "Rebalance triggers"),
    ("leave_and", "Rebalance triggers"),
    ("sync_", "SyncGroup"),
    ("heartbeat_", "Heartbeats and session expiry"),
    ("static_", "Static membership"),
    ("leave_", "LeaveGroup"),
    ("describe_", "DescribeGroups, ListGroups, DeleteGroups"),
    ("list_", "DescribeGroups, ListGroups, DeleteGroups"),
    ("delete_", "DescribeGroups, ListGroups, DeleteGroups"),
    ("offsets_", "Offsets"),
    ("find_coordinator", "FindCoordinator"),
    ("tie_", "Protocol selection"),
    ("protocol_", "Protocol selection"),
)


@dataclass
class Outcome:
    status: str  # "same" | "known gap" | "DIFFERENT" | "XPASS" | "error"
    seconds: float
    detail: str = ""
    broker: Transcript | None = None


@dataclass
class Row:
    scenario: Scenario
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    @property
    def versions_differ(self) -> bool | None:
        four, three = self.outcomes.get("4"), self.outcomes.get("3")
        if four is None or three is None or four.broker is None or three.broker is None:
            return None
        return bool(diff_transcripts(four.broker, three.broker))


def section(name: str) -> str:
    return next((title for prefix, title in SECTIONS if name.startswith(prefix)), "Other")


def summary(scenario: Scenario) -> str:
    text = " ".join(scenario.description.split())
    return text.replace("|", "\\|")


async def run_one(scenario: Scenario, broker: KafkaBroker, line: str, flavor: Flavor) -> Outcome:
    started = time.monotonic()
    gap = KNOWN_GAPS.get((scenario.name, line))
    try:
        comparison = await compare_async(scenario, broker.bootstrap, flavor)
    except Exception as exc:  # a scenario that cannot run is reported, not fatal for the report
        return Outcome("error", time.monotonic() - started, f"{type(exc).__name__}: {exc}")
    seconds = time.monotonic() - started
    problems = [f"broker missed an expectation: {f}" for f in comparison.broker.failures]
    if comparison.same and not problems:
        if gap is not None and gap[1]:  # a strict gap that no longer shows: remove it from KNOWN_GAPS
            return Outcome("XPASS", seconds, f"listed as a known gap ({gap[0]}) but now the same",
                           comparison.broker)
        return Outcome("same", seconds, broker=comparison.broker)
    if gap is not None:
        return Outcome("known gap", seconds, gap[0], comparison.broker)
    return Outcome("DIFFERENT", seconds, "\n".join(problems + comparison.diff), comparison.broker)


async def run_all(scenarios: list[Scenario], pool: BrokerPool) -> list[Row]:
    rows = [Row(s) for s in scenarios]
    for line, flavor in LINES:
        for row in rows:
            settings = broker_settings(row.scenario)
            broker = pool.get(line, settings or None)
            outcome = await run_one(row.scenario, broker, line, flavor)
            row.outcomes[line] = outcome
            print(f"  {row.scenario.name:45} Kafka {broker.version or line}: {outcome.status} "
                  f"({outcome.seconds:.1f} s)", flush=True)
    return rows


def cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return "not run"
    if outcome.status == "same":
        return "same"
    if outcome.status == "known gap":
        return f"known gap: {outcome.detail}".replace("|", "\\|")
    return f"**{outcome.status}**"


def render(rows: list[Row], versions: dict[str, str], seconds: float) -> str:
    counts = {line: {s: sum(1 for r in rows if r.outcomes.get(line, Outcome("not run", 0)).status == s)
                     for s in ("same", "known gap", "DIFFERENT", "XPASS", "error")} for line, _ in LINES}
    out = [
        "# Differential report: the emulator against real Kafka brokers",
        "",
        "Generated by `benchmarks/differential_report.py` (do not edit by hand). Each scenario of",
        "`rebalance_lab/scenarios/library/` (format: `rebalance_lab/scenarios/FORMAT.md`) runs against the emulator",
        "with the flavor of a release line and against a real broker of that line; the normalised",
        "transcripts must be identical (`tests/integration/test_scenarios.py` asserts the same).",
        "Scenarios that declare `initial_rebalance_delay_ms` / `min_session_timeout_ms` run on a",
        "broker started with those settings (`group.initial.rebalance.delay.ms`,",
        "`group.min.session.timeout.ms`), the others on one with a zero initial delay.",
        "",
        f"* Scenarios: {len(rows)}; total time {seconds:.0f} s (broker start-up included).",
    ]
    for line, flavor in LINES:
        c = counts[line]
        out.append(f"* Kafka {versions.get(line, line)} (emulator flavor `{flavor.value}`): {c['same']} same, "
                   f"{c['known gap']} known gaps, {c['DIFFERENT']} different, {c['XPASS']} unexpectedly "
                   f"passing, {c['error']} errors.")
    differ = [r.scenario.name for r in rows if r.versions_differ]
    out.append(f"* Scenarios where Kafka {versions.get('4', '4')} and {versions.get('3', '3')} answer "
               f"differently (Java vs Scala coordinator): {len(differ)}"
               + (f" ({', '.join(f'`{n}`' for n in differ)})." if differ else "."))
    out.append("")
    header = (f"| Scenario | Covers | Kafka {versions.get('4', '4')} (`kafka-4`) | "
              f"Kafka {versions.get('3', '3')} (`kafka-3`) | 4 vs 3 differ |")
    current = None
    for row in sorted(rows, key=lambda r: (section(r.scenario.name), r.scenario.name)):
        title = section(row.scenario.name)
        if title != current:
            out += ["", f"## {title}", "", header, "|---|---|---|---|---|"]
            current = title
        settings = broker_settings(row.scenario)
        note = (" Broker: " + ", ".join(f"`{k}={v}`" for k, v in settings.items()) + ".") if settings else ""
        differs = {True: "yes", False: "no", None: "?"}[row.versions_differ]
        out.append(f"| `{row.scenario.name}` | {summary(row.scenario)}{note} | {cell(row.outcomes.get('4'))} | "
                   f"{cell(row.outcomes.get('3'))} | {differs} |")
    unexpected = [(r, line, o) for r in rows for line, o in r.outcomes.items()
                  if o.status in ("DIFFERENT", "XPASS", "error")]
    if unexpected:
        out += ["", "## Unexpected results", ""]
        for row, line, outcome in unexpected:
            out += [f"### `{row.scenario.name}` on Kafka {versions.get(line, line)}: {outcome.status}", "",
                    "```diff", outcome.detail, "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these scenarios (file stems); default: all")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="default: %(default)s")
    args = parser.parse_args(argv)
    paths = sorted(SCENARIO_DIR.glob("*.yaml"))
    if args.names:
        paths = [p for p in paths if p.stem in set(args.names)]
    scenarios = [load_scenario(p) for p in paths]
    started = time.monotonic()
    pool = BrokerPool()
    try:
        rows = asyncio.run(run_all(scenarios, pool))
        versions = {b.flavor: b.version or b.flavor for b in pool.started}
    finally:
        pool.close()
    seconds = time.monotonic() - started
    args.output.write_text(render(rows, versions, seconds), encoding="utf-8")
    bad = sum(1 for r in rows for o in r.outcomes.values() if o.status in ("DIFFERENT", "XPASS", "error"))
    print(f"{len(scenarios)} scenarios x {len(LINES)} Kafka lines in {seconds:.1f} s; {bad} unexpected; "
          f"wrote {args.output}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
