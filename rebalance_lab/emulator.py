"""Start an emulator with everything its configuration asks for (recording, narration)."""

from __future__ import annotations

import sys
from typing import IO

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.clock import Clock
from rebalance_lab.coordinator.server import EmulatorServer, WorldHook
from rebalance_lab.coordinator.world import World


def observer_hooks(config: EmulatorConfig, explain_to: IO[str] | None = None) -> tuple[list[WorldHook], list[IO[str]]]:
    """World hooks for ``--record`` and ``--explain``, and the files they opened."""
    hooks: list[WorldHook] = []
    opened: list[IO[str]] = []
    if config.record_path:
        out = open(config.record_path, "a", encoding="utf-8")  # noqa: SIM115 - closed when the server stops
        opened.append(out)

        def record(world: World) -> None:
            from rebalance_lab.observe import recorder

            recorder.install(world, out)

        hooks.append(record)
    if config.explain:
        stream = explain_to or sys.stdout

        def explain(world: World) -> None:
            from rebalance_lab.observe import narrator

            narrator.install(world, stream)

        hooks.append(explain)
    return hooks, opened


async def start_emulator(
    config: EmulatorConfig, *, clock: Clock | None = None, explain_to: IO[str] | None = None
) -> EmulatorServer:
    """A started :class:`EmulatorServer`; the caller stops it with ``await server.stop()``."""
    hooks, opened = observer_hooks(config, explain_to)
    server = EmulatorServer(config, clock=clock, world_hooks=tuple(hooks))
    for out in opened:
        server.add_cleanup(out.close)
    try:
        await server.start()
    except BaseException:
        for out in opened:
            out.close()
        raise
    return server
