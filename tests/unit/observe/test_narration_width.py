"""Every line of a narrated run of every scenario fits 100 columns (issue 19: 102 of 196 lines were wider
than 120), for both flavors and for KIP-848 groups: the scenarios run on in-process emulators with
``--explain`` on, several at once so the whole library takes seconds."""

from __future__ import annotations

import asyncio
import dataclasses
import io
from pathlib import Path

from rebalance_lab.config import Flavor
from rebalance_lab.emulator import start_emulator
from rebalance_lab.observe.narrator import WIDTH
from rebalance_lab.scenarios import load_scenario, run_scenario_async
from rebalance_lab.scenarios.compare import emulator_config
from rebalance_lab.scenarios.library import LIBRARY

AT_ONCE = 16


async def narrated(path: Path, flavor: Flavor, gate: asyncio.Semaphore) -> str:
    scenario = load_scenario(path)
    config = emulator_config(scenario.initial_rebalance_delay_ms, flavor, scenario.min_session_timeout_ms,
                             scenario.broker)
    out = io.StringIO()
    async with gate:
        server = await start_emulator(dataclasses.replace(config, explain=True), explain_to=out)
        try:
            await run_scenario_async(scenario, server.bootstrap_servers)
        finally:
            await server.stop()
    return out.getvalue()


async def test_every_line_of_every_narrated_scenario_fits_100_columns() -> None:
    classic, kip848 = sorted(LIBRARY.glob("*.yaml")), sorted(LIBRARY.glob("kip848/*.yaml"))
    runs = [(p, f) for p in classic for f in Flavor] + [(p, Flavor.KAFKA_4) for p in kip848]
    gate = asyncio.Semaphore(AT_ONCE)
    texts = await asyncio.gather(*(narrated(p, f, gate) for p, f in runs))
    lines = [(p.stem, line) for (p, _), text in zip(runs, texts, strict=True) for line in text.splitlines()]
    assert len(lines) > 5_000  # every scenario was narrated
    assert [(name, line) for name, line in lines if len(line) > WIDTH] == []
    told = "\n".join(texts)
    # the narration of the whole library covers the situations issue 19 names
    for sentence in ("join refused with INCONSISTENT_GROUP_PROTOCOL", "heartbeat is answered REBALANCE_IN_PROGRESS",
                     "is now fenced", "tie between", "leader unchanged", "group epoch"):
        assert sentence in told, sentence
