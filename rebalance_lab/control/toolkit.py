"""Install the testing toolkit into a started emulator: faults, generation history, control endpoint."""

from __future__ import annotations

from typing import IO

from rebalance_lab.control.http import ControlServer, check_loopback
from rebalance_lab.control.routes import Router
from rebalance_lab.control.views import GenerationHistory
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.faults.controller import FaultController


def install(server: EmulatorServer, narrate_to: IO[str] | None = None) -> FaultController:
    """The fault controller and the history recorder (idempotent); faults are narrated to ``narrate_to``."""
    GenerationHistory.install(server.world)
    return FaultController.install(server.world, server.close_connections, narrate_to)


async def start_control(server: EmulatorServer) -> ControlServer | None:
    """Start the HTTP control endpoint when the configuration asks for one."""
    config = server.config
    if config.control_port is None:
        return None
    check_loopback(config.control_host)
    router = Router(server.world, server.advance)
    return await ControlServer(router, config.control_host, config.control_port, config.control_token).start()
