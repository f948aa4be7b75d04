"""Shared fixtures for tests that drive real Kafka clients against a running emulator.

``running_emulator`` is the one place that starts an emulator. Tests see only a
:class:`RunningEmulator` (bootstrap servers and broker count) and create their
topics over the wire, so another way of starting the emulator (a ``rebalance-lab
serve`` subprocess) can be added as one more fixture parameter without touching a test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer


@dataclass(frozen=True)
class RunningEmulator:
    bootstrap_servers: str
    brokers: int
    server: EmulatorServer | None = None  # set for an in-process emulator only


@pytest.fixture(params=[1, 3], ids=["1-broker", "3-brokers"])
def broker_count(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
async def running_emulator(broker_count: int) -> AsyncIterator[RunningEmulator]:
    """An in-process emulator on free loopback ports, stopped after the test."""
    async with EmulatorServer(EmulatorConfig(port=0, brokers=broker_count)) as server:
        yield RunningEmulator(server.bootstrap_servers, broker_count, server)
