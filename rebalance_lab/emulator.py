"""Start an emulator with everything its configuration asks for (recording, narration)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.clock import Clock
from rebalance_lab.coordinator.server import EmulatorServer, WorldHook
from rebalance_lab.coordinator.world import World

if TYPE_CHECKING:  # observe/ is imported only when --record or --explain asks for it (start-up, issue 22)
    from rebalance_lab.observe.recording_file import RecordingFile


def observer_hooks(config: EmulatorConfig,
                   explain_to: IO[str] | None = None) -> tuple[list[WorldHook], list[RecordingFile]]:
    """World hooks for ``--record`` and ``--explain``, and the files they opened."""
    hooks: list[WorldHook] = []
    opened: list[RecordingFile] = []
    if config.record_path:
        from rebalance_lab.observe.recording_file import RecordingFile

        out = RecordingFile(config.record_path)  # streamed to disk; a write error is logged, never raised
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


def storage_hook(config: EmulatorConfig, closers: list[Callable[[], None]]) -> list[WorldHook]:
    """``--data-dir``: load the directory into the world first, then write every change to it. The
    storage package is imported only here, so a memory-only emulator starts as fast as before."""
    if config.data_dir is None:
        return []
    data_dir = config.data_dir

    def load(world: World) -> None:
        from rebalance_lab.storage import service
        from rebalance_lab.storage.segments import FlushPolicy

        storage = service.install(world, data_dir, FlushPolicy(config.flush_messages, config.flush_ms))
        closers.append(storage.close)

    return [load]


async def start_emulator(
    config: EmulatorConfig, *, clock: Clock | None = None, explain_to: IO[str] | None = None
) -> EmulatorServer:
    """A started :class:`EmulatorServer`; the caller stops it with ``await server.stop()``."""
    closers: list[Callable[[], None]] = []
    hooks, opened = observer_hooks(config, explain_to)
    closers.extend(out.close for out in opened)
    server = EmulatorServer(config, clock=clock, world_hooks=(*storage_hook(config, closers), *hooks))
    try:
        await server.start()
    except BaseException:
        for close in closers:
            close()
        raise
    for close in closers:
        server.add_cleanup(close)
    return server
