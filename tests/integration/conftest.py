"""Shared fixtures for tests that drive real Kafka clients against a running emulator.

``running_emulator`` is the one place that starts an emulator. Tests see only a
:class:`RunningEmulator` (bootstrap servers and broker count) and create their
topics over the wire, so another way of starting the emulator (a ``rebalance-lab
serve`` subprocess) can be added as one more fixture parameter without touching a test.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

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


@pytest.fixture(params=["in-process", "subprocess"])
def emulator_start(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def running_emulator(broker_count: int, emulator_start: str) -> AsyncIterator[RunningEmulator]:
    """An emulator on free loopback ports, in this process or as a ``rebalance-lab serve`` subprocess."""
    if emulator_start == "in-process":
        async with EmulatorServer(EmulatorConfig(port=0, brokers=broker_count)) as server:
            yield RunningEmulator(server.bootstrap_servers, broker_count, server)
        return
    exe = Path(sys.executable).with_name("rebalance-lab")
    proc = await asyncio.create_subprocess_exec(
        str(exe), "serve", "--port", "0", "--brokers", str(broker_count), stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        match = re.search(r"bootstrap servers: (\S+)", line)
        assert match, f"rebalance-lab serve printed {line!r}"
        yield RunningEmulator(match.group(1), broker_count)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
