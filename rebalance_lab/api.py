"""The Python API: ``Emulator``, usable from async and from synchronous code.

    async with Emulator(topics=[("orders", 6)]) as emu:      # on the caller's event loop
        consumer = AIOKafkaConsumer(..., bootstrap_servers=emu.bootstrap_servers)

    with Emulator(initial_rebalance_delay_ms=0) as emu:      # on a background thread
        consumer = KafkaConsumer(..., bootstrap_servers=emu.bootstrap_servers)
        emu.wait_for_group("g", state="Stable", generation_at_least=1)

In the synchronous form every inspection call runs on the emulator's own loop
thread, so it never races a request being served.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import IO, Any, TypeVar

from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.group.view import GroupView
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.emulator import start_emulator

T = TypeVar("T")

_GROUP_FIELDS = {
    "initial_rebalance_delay_ms", "min_session_timeout_ms", "max_session_timeout_ms", "max_size",
    "offsets_topic_num_partitions", "new_member_join_timeout_ms", "offsets_retention_minutes",
    "offsets_retention_check_interval_ms", "offset_metadata_max_bytes",
}


def make_config(config: EmulatorConfig | None = None, **options: Any) -> EmulatorConfig:
    """An EmulatorConfig from keyword options: every ``serve`` option, by its Python name.

    ``port`` defaults to 0 (free ports) here, unlike the CLI, so tests never collide.
    """
    base = config or EmulatorConfig(port=0)
    group_options = {k: options.pop(k) for k in list(options) if k in _GROUP_FIELDS}
    if "flavor" in options:
        options["flavor"] = Flavor(options["flavor"])
    if "topics" in options:
        options["topics"] = tuple((name, int(count)) for name, count in options["topics"])
    if "racks" in options:
        options["racks"] = tuple(options["racks"])
    group = replace(base.group, **group_options) if group_options else base.group
    try:
        return replace(base, group=group, **options)
    except TypeError as exc:
        raise TypeError(f"unknown Emulator option: {exc}") from None


class Emulator:
    def __init__(self, config: EmulatorConfig | None = None, *, explain_to: IO[str] | None = None,
                 **options: Any) -> None:
        self.config = make_config(config, **options)
        self._explain_to = explain_to
        self._server: EmulatorServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- async form ------------------------------------------------------------------

    async def __aenter__(self) -> Emulator:
        self._server = await start_emulator(self.config, explain_to=self._explain_to)
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None

    # -- sync form (background thread) ---------------------------------------------------

    def __enter__(self) -> Emulator:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(start_emulator(self.config, explain_to=self._explain_to))
            except BaseException as exc:
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="rebalance-lab-emulator", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None and self._loop is not None:
            self._run_sync(self._server.stop())
            self._server = None
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _on_loop(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the emulator's loop thread (or directly in the async form)."""
        if self._thread is None:
            return fn()

        async def call() -> T:
            return fn()

        return self._run_sync(call())

    # -- shared ---------------------------------------------------------------------------

    @property
    def server(self) -> EmulatorServer:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return self._server

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    def group(self, group_id: str) -> GroupView | None:
        """A snapshot of one group (state, generation, protocol, leader, members, assignments)."""
        return self._on_loop(lambda: service_of(self.server.world).coordinator.group(group_id))

    def groups(self) -> list[GroupView]:
        return self._on_loop(lambda: service_of(self.server.world).coordinator.groups())

    def advance(self, ms: int) -> None:
        """Move a manual clock (``manual_clock=True``) forward, firing every timer that became due."""
        self._on_loop(lambda: self.server.advance(ms))

    def wait_for_group(self, group_id: str, *, state: str | None = None, generation_at_least: int | None = None,
                       members: int | None = None, timeout: float = 30.0) -> GroupView:
        """Block until the group matches; raise TimeoutError naming what was last seen."""
        deadline = time.monotonic() + timeout
        while True:
            view = self.group(group_id)
            if _matches(view, state, generation_at_least, members):
                assert view is not None
                return view
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id!r} did not reach state={state} generation>="
                                   f"{generation_at_least} members={members} in {timeout}s; last seen: "
                                   f"{_summary(view)}")
            time.sleep(0.02)

    async def wait_for_group_async(self, group_id: str, *, state: str | None = None,
                                   generation_at_least: int | None = None, members: int | None = None,
                                   timeout: float = 30.0) -> GroupView:
        deadline = time.monotonic() + timeout
        while True:
            view = self.group(group_id)
            if _matches(view, state, generation_at_least, members):
                assert view is not None
                return view
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id!r} did not match in {timeout}s; last seen: {_summary(view)}")
            await asyncio.sleep(0.02)


def _matches(view: GroupView | None, state: str | None, generation_at_least: int | None,
             members: int | None) -> bool:
    if view is None:
        return False
    if state is not None and view.state != state:
        return False
    if generation_at_least is not None and view.generation_id < generation_at_least:
        return False
    return members is None or len(view.members) == members


def _summary(view: GroupView | None) -> str:
    if view is None:
        return "no such group"
    return f"state={view.state} generation={view.generation_id} members={len(view.members)}"


__all__ = ["Emulator", "EmulatorConfig", "Flavor", "GroupConfig", "make_config"]
