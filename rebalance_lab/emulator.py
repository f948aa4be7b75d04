"""Start an emulator with everything its configuration asks for (recording, narration)."""

from __future__ import annotations

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.clock import Clock
from rebalance_lab.coordinator.server import EmulatorServer


async def start_emulator(config: EmulatorConfig, *, clock: Clock | None = None) -> EmulatorServer:
    """A started :class:`EmulatorServer`; the caller stops it with ``await server.stop()``."""
    server = EmulatorServer(config, clock=clock)
    await server.start()
    return server
