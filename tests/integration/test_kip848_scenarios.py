"""The KIP-848 scenarios (rebalance_lab/scenarios/library/kip848/*.yaml) against the emulator and a real broker.

Each scenario is written for Kafka 4.4.0 (``flavors: ["3"]`` marks the one for a default 3.9
broker); its ``expect`` clauses hold what the real broker answered, and the differential test
asserts the emulator's normalised transcript is the broker's, line for line. A scenario
declaring ``broker:`` properties runs on a broker started with them, and the emulator gets
the same settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.scenarios import broker_settings, compare_async, load_scenario, run_on_emulator
from rebalance_lab.scenarios.library import LIBRARY
from rebalance_lab.scenarios.model import Scenario

SCENARIOS = sorted((LIBRARY / "kip848").glob("*.yaml"))

# Differences from the real broker the emulator does not reproduce yet: scenario -> reason.
# Strict: a fix makes the test XPASS, and the entry must go.
KNOWN_GAPS: dict[str, str] = {}


def _flavor(scenario: Scenario) -> str:
    return scenario.flavors[0] if scenario.flavors else "4"


def _params() -> list[Any]:
    out = []
    for path in SCENARIOS:
        gap = KNOWN_GAPS.get(path.stem)
        marks = [pytest.mark.xfail(reason=gap, strict=True)] if gap else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


def test_there_are_at_least_thirty_kip848_scenarios_for_kafka_4() -> None:
    assert len([p for p in SCENARIOS if _flavor(load_scenario(p)) == "4"]) >= 30


@pytest.mark.parametrize("path", _params())
async def test_every_kip848_scenario_meets_its_expectations_on_the_emulator(path: Path) -> None:
    scenario = load_scenario(path)
    flavor = Flavor.KAFKA_4 if _flavor(scenario) == "4" else Flavor.KAFKA_3
    transcript = await run_on_emulator(scenario, flavor)
    assert transcript.ok, "\n".join(transcript.failures) + "\n\n" + transcript.text()
    assert {e.outcome for e in transcript.entries()} <= {"answered"}, transcript.text()


@pytest.mark.broker
@pytest.mark.parametrize("path", _params())
async def test_the_emulator_answers_every_kip848_scenario_like_the_real_broker(kafka_brokers: Any, path: Path) -> None:
    scenario = load_scenario(path)
    flavor = _flavor(scenario)
    broker = kafka_brokers.get(flavor, broker_settings(scenario) or None)
    comparison = await compare_async(scenario, broker.bootstrap, Flavor.KAFKA_4 if flavor == "4" else Flavor.KAFKA_3)
    assert comparison.broker.ok, "\n".join(comparison.broker.failures) + "\n\n" + comparison.broker.text()
    assert comparison.same, "\n".join(comparison.diff)
