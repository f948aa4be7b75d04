"""Differential runs: the same scenario against an in-process emulator and a broker.

Backs ``rebalance-lab diff SCENARIO --against HOST:PORT``. The emulator is configured
like the broker the harness starts: the scenario's ``initial_rebalance_delay_ms`` and
``min_session_timeout_ms`` and the API-version table of the chosen flavor;
:func:`broker_settings` gives the broker properties a real broker needs for the same run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.scenarios.loader import load_scenario
from rebalance_lab.scenarios.model import Scenario, ScenarioError
from rebalance_lab.scenarios.runner import ScenarioSource, run_scenario_async
from rebalance_lab.scenarios.transcript import Transcript, diff_transcripts


@dataclass(frozen=True)
class Comparison:
    emulator: Transcript
    broker: Transcript
    diff: list[str]

    @property
    def same(self) -> bool:
        return not self.diff


def emulator_config(
    initial_rebalance_delay_ms: int, flavor: Flavor = Flavor.KAFKA_4, min_session_timeout_ms: int = 6_000,
    broker: Mapping[str, str] | None = None,
) -> EmulatorConfig:
    config = EmulatorConfig(
        port=0,
        flavor=flavor,
        api_versions=flavor.value,
        group=GroupConfig(initial_rebalance_delay_ms=initial_rebalance_delay_ms,
                          min_session_timeout_ms=min_session_timeout_ms),
    )
    return _with_properties(config, broker or {})


def _with_properties(config: EmulatorConfig, broker: Mapping[str, str]) -> EmulatorConfig:
    """A scenario's ``broker:`` properties on the emulator's config, all at once (the config
    checks Kafka's cross-field rules): ``group.consumer.X.Y`` is ``consumer_group.X_Y``
    (KIP-848 settings), ``group.X.Y`` is ``group.X_Y``."""
    changes: dict[str, dict[str, object]] = {}
    for prop, value in broker.items():
        section, name = ("consumer_group", prop[len("group.consumer."):]) if prop.startswith("group.consumer.") \
            else ("group", prop.removeprefix("group."))
        part: Any = getattr(config, section, None)
        key = name.replace(".", "_")
        if part is None or key not in {f.name for f in dataclasses.fields(part)}:
            raise ScenarioError(f"broker property {prop!r} has no emulator setting ({section}.{key})")
        changes.setdefault(section, {})[key] = int(value) if isinstance(getattr(part, key), int) else value
    parts: dict[str, Any] = {section: dataclasses.replace(getattr(config, section), **values)
                             for section, values in changes.items()}
    return dataclasses.replace(config, **parts)


def broker_settings(scenario: Scenario) -> dict[str, str | int | bool]:
    """The broker properties a scenario needs beyond a test broker's defaults (an initial
    delay of 0 and Kafka's default minimum session timeout); empty when it needs none."""
    settings: dict[str, str | int | bool] = {}
    if scenario.initial_rebalance_delay_ms != 0:
        settings["group.initial.rebalance.delay.ms"] = scenario.initial_rebalance_delay_ms
    if scenario.min_session_timeout_ms != GroupConfig.min_session_timeout_ms:
        settings["group.min.session.timeout.ms"] = scenario.min_session_timeout_ms
    settings.update(scenario.broker)
    return settings


async def run_on_emulator(source: ScenarioSource, flavor: Flavor = Flavor.KAFKA_4) -> Transcript:
    scenario = load_scenario(source)
    config = emulator_config(scenario.initial_rebalance_delay_ms, flavor, scenario.min_session_timeout_ms,
                             scenario.broker)
    async with EmulatorServer(config) as server:
        return await run_scenario_async(scenario, server.bootstrap_servers)


async def compare_async(source: ScenarioSource, against: str, flavor: Flavor = Flavor.KAFKA_4) -> Comparison:
    scenario = load_scenario(source)
    emulated = await run_on_emulator(scenario, flavor)
    real = await run_scenario_async(scenario, against)
    return Comparison(emulated, real, diff_transcripts(emulated, real))


def compare(source: ScenarioSource, against: str, flavor: Flavor = Flavor.KAFKA_4) -> Comparison:
    """Blocking form for the CLI: run on the emulator, then on ``against``, and diff."""
    return asyncio.run(compare_async(source, against, flavor))
