"""The Python API: ``Emulator``, usable from async and from synchronous code.

    async with Emulator(topics=[("orders", 6)]) as emu:      # on the caller's event loop
        consumer = AIOKafkaConsumer(..., bootstrap_servers=emu.bootstrap_servers)

    with Emulator(initial_rebalance_delay_ms=0) as emu:      # on a background thread
        consumer = KafkaConsumer(..., bootstrap_servers=emu.bootstrap_servers)
        emu.wait_for_group("g", state="Stable", generation_at_least=1)
        emu.inject_error("Heartbeat", "REBALANCE_IN_PROGRESS", group_id="g")   # fault injection
        emu.describe("g")["members"][0]["assignment"]                          # decoded inspection

Every fault is recorded (``FAULT_INJECTED`` / ``FAULT_FIRED`` rows, narrated with
``explain=True``). ``control_port=0`` also serves the HTTP/JSON control endpoint
(``docs/control-api.md``) at :attr:`Emulator.control_url`.

In the synchronous form every inspection call runs on the emulator's own loop
thread, so it never races a request being served.
"""

from __future__ import annotations

import asyncio
import difflib
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import fields, replace
from typing import IO, Any, TypeVar

from rebalance_lab.client_polling import BackgroundPolling
from rebalance_lab.config import JOIN_RACES, ConsumerGroupConfig, EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.control import toolkit, views
from rebalance_lab.control.http import ControlServer
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.emulator import start_emulator
from rebalance_lab.faults.controller import FaultController
from rebalance_lab.observe.tail import NarrationTail

T = TypeVar("T")
AnyGroupView = GroupView | ConsumerGroupView  # classic (JoinGroup/SyncGroup) or KIP-848 consumer group

_GROUP_FIELDS = {
    "initial_rebalance_delay_ms", "min_session_timeout_ms", "max_session_timeout_ms", "max_size",
    "offsets_topic_num_partitions", "new_member_join_timeout_ms", "offsets_retention_minutes",
    "offsets_retention_check_interval_ms", "offset_metadata_max_bytes", "join_race",
}

_CONSUMER_FIELDS = {f.name for f in fields(ConsumerGroupConfig)}


def make_config(config: EmulatorConfig | None = None, **options: Any) -> EmulatorConfig:
    """An EmulatorConfig from keyword options: every ``serve`` option, by its Python name.

    ``port`` defaults to 0 (free ports) here, unlike the CLI, so tests never collide.
    """
    base = config or EmulatorConfig(port=0)
    _check_options(options)
    group_options = {k: options.pop(k) for k in list(options) if k in _GROUP_FIELDS}
    # KIP-848 settings: consumer_<ConsumerGroupConfig field>, e.g. consumer_session_timeout_ms (serve's flags)
    consumer_options = {k.removeprefix("consumer_"): options.pop(k) for k in list(options)
                        if k.startswith("consumer_") and k.removeprefix("consumer_") in _CONSUMER_FIELDS}
    if "assignors" in consumer_options:
        consumer_options["assignors"] = tuple(consumer_options["assignors"])
    if "flavor" in options:
        options["flavor"] = Flavor(options["flavor"])
    if "topics" in options:
        options["topics"] = tuple((name, int(count)) for name, count in options["topics"])
    if "racks" in options:
        options["racks"] = tuple(options["racks"])
    for name in ("sasl_mechanisms", "users", "additional_listeners"):  # lists too; the config keeps tuples
        if name in options:
            options[name] = tuple(options[name])
    group = replace(base.group, **group_options) if group_options else base.group
    consumer = replace(base.consumer_group, **consumer_options) if consumer_options else base.consumer_group
    return replace(base, group=group, consumer_group=consumer, **options)


def option_names() -> list[str]:
    """Every keyword option :func:`make_config` (and so ``Emulator``) takes, sorted."""
    top = {f.name for f in fields(EmulatorConfig)} - {"group", "consumer_group"}
    return sorted(top | _GROUP_FIELDS | {f"consumer_{name}" for name in _CONSUMER_FIELDS})


# Options with a fixed set of values: a wrong one is answered with the valid ones
_CHOICES: dict[str, tuple[str, ...]] = {
    "flavor": tuple(f.value for f in Flavor), "placement": ("auto", "striped", "adminutils"),
    "join_race": JOIN_RACES,
}


def _check_options(options: dict[str, Any]) -> None:
    """TypeError for an unknown option (with the closest known name), ValueError for a value not among the
    choices: raised before anything starts, so a typo never silently runs with defaults."""
    known = option_names()
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; the options are {', '.join(known)}"
            raise TypeError(f"unknown Emulator option {name!r}{hint}")
    for name, choices in _CHOICES.items():
        value = options.get(name)
        if value is not None and str(value) not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")  # GroupConfig's words


class Emulator:
    def __init__(self, config: EmulatorConfig | None = None, *, explain_to: IO[str] | None = None,
                 keep_narration: int = 0, **options: Any) -> None:
        """``keep_narration=N`` keeps the newest N narration lines in memory (:meth:`recent_narration`),
        with or without ``explain``."""
        self.config = make_config(config, **options)
        self._explain_to = explain_to
        self._tail = NarrationTail(keep_narration) if keep_narration > 0 else None
        self._server: EmulatorServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._control: ControlServer | None = None

    async def _start(self) -> EmulatorServer:
        server = await start_emulator(self.config, explain_to=self._explain_to)
        narrate_to = (self._explain_to or sys.stdout) if self.config.explain else None
        toolkit.install(server, narrate_to)
        if self._tail is not None:
            from rebalance_lab.observe import narrator  # imported on demand, as emulator.observer_hooks does

            narrator.install(server.world, self._tail)
        try:
            self._control = await toolkit.start_control(server)
        except BaseException:
            await server.stop()
            raise
        return server

    async def _stop(self, server: EmulatorServer) -> None:
        if self._control is not None:
            await self._control.stop()
            self._control = None
        await server.stop()

    # -- async form ------------------------------------------------------------------

    async def __aenter__(self) -> Emulator:
        self._server = await self._start()
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            await self._stop(self._server)
            self._server = None

    # -- sync form (background thread) ---------------------------------------------------

    def __enter__(self) -> Emulator:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(self._start())
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
            self._run_sync(self._stop(self._server))
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

    def __repr__(self) -> str:
        if self._server is None:
            return f"<Emulator {self.config.flavor.value} (not running)>"
        brokers = f"{self.config.brokers} broker{'s' * (self.config.brokers > 1)}"
        return f"<Emulator {self.config.flavor.value} at {self.bootstrap_servers} ({brokers})>"

    @property
    def running(self) -> bool:
        return self._server is not None

    def recent_narration(self) -> list[str]:
        """The newest narration lines kept with ``keep_narration=N`` (empty without it)."""
        return [] if self._tail is None else self._on_loop(self._tail.lines)

    @property
    def server(self) -> EmulatorServer:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return self._server

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    def bootstrap_servers_of(self, listener: str) -> str:
        """The bootstrap address of an additional listener (``additional_listeners=("SASL_SSL:0",)``)."""
        from rebalance_lab.security.additional import bootstrap_of

        return self._on_loop(lambda: bootstrap_of(self.server.world.services, listener))

    @property
    def control_url(self) -> str | None:
        """The HTTP control endpoint's base URL (``control_port=...``), or None when it is off."""
        return None if self._control is None else self._control.url

    @property
    def faults(self) -> FaultController:
        """The fault controller itself (call it on the emulator's loop; the methods below do that for you)."""
        return toolkit.install(self.server)

    def group(self, group_id: str) -> AnyGroupView | None:
        """A snapshot of one group: a classic :class:`GroupView` (state, generation, protocol, leader, members,
        assignments) or a KIP-848 :class:`ConsumerGroupView` (``group_type == "consumer"``: epochs, members
        with their epochs, states, assigned / pending-revocation / target partitions by topic id)."""
        def read() -> AnyGroupView | None:
            service = service_of(self.server.world)
            return service.consumer.group(group_id) or service.coordinator.group(group_id)

        return self._on_loop(read)

    def groups(self) -> list[AnyGroupView]:
        def read() -> list[AnyGroupView]:
            service = service_of(self.server.world)
            return [*service.coordinator.groups(), *service.consumer.groups()]

        return self._on_loop(read)

    def consumer_group(self, group_id: str) -> ConsumerGroupView | None:
        """A KIP-848 consumer group's snapshot (None when the group is unknown or classic)."""
        return self._on_loop(lambda: service_of(self.server.world).consumer.group(group_id))

    # -- decoded inspection (JSON-ready, as the control endpoint answers) -------------------

    def describe(self, group_id: str) -> dict[str, Any] | None:
        """As ``GET /groups/{id}``: a classic group's state, generation, protocol, leader, coordinator and
        members with decoded subscriptions and assignments; a consumer group's (``"type": "consumer"``)
        epochs, assignor and members with epochs, states and assigned / pending_revocation / target partitions
        by topic name. None for an unknown group."""
        return self._on_loop(lambda: views.any_group_json(self.server.world, group_id))

    def describe_groups(self) -> list[dict[str, Any]]:
        return self._on_loop(lambda: views.groups_json(self.server.world))

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """Committed offsets of a group: ``{(topic, partition): offset}``."""
        rows = self._on_loop(lambda: views.offsets_json(self.server.world, group_id))
        return {(r["topic"], r["partition"]): r["offset"] for r in rows}

    def offsets(self, group_id: str) -> list[dict[str, Any]]:
        """Committed offsets with leader epoch, metadata and commit time, sorted by topic and partition."""
        return self._on_loop(lambda: views.offsets_json(self.server.world, group_id))

    def history(self, group_id: str) -> views.History:
        """The group's generations (KIP-848: group epochs), oldest first: members, votes, leader, decoded
        assignments. Only the newest ``history_limit`` (default 1,000) per group and ``history_total_limit``
        (10,000) in all are kept; the answer, a list, also carries ``.limit`` and ``.dropped`` (older entries
        forgotten). ``history_limit=0`` turns the history off."""
        return self._on_loop(lambda: views.history_of(self.server.world).of(group_id))

    def history_summary(self) -> dict[str, Any]:
        """The history's caps, how many entries it keeps, and how many it dropped (as ``GET /history``)."""
        return self._on_loop(lambda: views.history_of(self.server.world).store.summary())

    def brokers(self) -> list[dict[str, Any]]:
        return self._on_loop(lambda: views.brokers_json(self.server.world))

    def recording_status(self) -> dict[str, Any] | None:
        """The ``record_path`` file: ``path``, events ``written`` and ``lost``, and the write ``error`` that
        lost them (None while all is well); None without a recording."""
        from rebalance_lab.observe.recorder import recording_of

        return self._on_loop(lambda: None if (out := recording_of(self.server.world)) is None else out.status())

    def request_counts(self, api: str | None = None) -> dict[int, int]:
        """Requests served per broker so far (of one API, e.g. ``"Heartbeat"``, or of all)."""
        def count() -> dict[int, int]:
            totals: dict[int, int] = {}
            for (broker, name), n in self.faults.requests.items():
                if api is None or name == api:
                    totals[broker] = totals.get(broker, 0) + n
            return totals

        return self._on_loop(count)

    # -- faults (each one recorded as FAULT_INJECTED; see rebalance_lab.faults) -------------

    def inject_error(self, api: int | str, error: int | str, *, count: int = 1, group_id: str | None = None,
                     member_id: str | None = None, broker: int | None = None) -> None:
        """Answer the next ``count`` requests of ``api`` (optionally of one group/member/broker) with ``error``."""
        self._on_loop(lambda: self.faults.inject_error(api, error, count=count, group_id=group_id,
                                                       member_id=member_id, broker=broker))

    def add_latency(self, ms: int, *, api: int | str | None = None, broker: int | None = None,
                    count: int | None = None) -> None:
        """Delay answers by ``ms`` (every API and broker unless narrowed; until cleared unless ``count``)."""
        self._on_loop(lambda: self.faults.add_latency(ms, api=api, broker=broker, count=count))

    def throttle(self, ms: int, *, api: int | str | None = None, broker: int | None = None,
                 count: int | None = None) -> None:
        """Report ``throttle_time_ms=ms`` in matching responses and hold them that long."""
        self._on_loop(lambda: self.faults.throttle(ms, api=api, broker=broker, count=count))

    def clear_faults(self) -> None:
        self._on_loop(lambda: self.faults.clear())

    def close_connections(self, client_id: str) -> int:
        """Close every connection of the client with this ``client.id``; how many were closed."""
        return self._on_loop(lambda: self.faults.close_client_connections(client_id))

    def broker_down(self, broker: int) -> None:
        self._on_loop(lambda: self.faults.broker_down(broker))

    def broker_up(self, broker: int) -> None:
        self._on_loop(lambda: self.faults.broker_up(broker))

    def move_coordinator(self, group_id: str, broker: int) -> None:
        """The old coordinator answers NOT_COORDINATOR; FindCoordinator names ``broker``."""
        self._on_loop(lambda: self.faults.move_coordinator(group_id, broker))

    def load_in_progress(self, ms: int) -> None:
        """COORDINATOR_LOAD_IN_PROGRESS for group requests during the next ``ms`` (world time)."""
        self._on_loop(lambda: self.faults.load_in_progress(ms))

    def delay_transaction_markers(self, ms: int) -> None:
        """Write the markers of transactions ending from now on ``ms`` later (CONCURRENT_TRANSACTIONS meanwhile)."""
        self._on_loop(lambda: self.faults.delay_transaction_markers(ms))

    def force_rebalance(self, group_id: str) -> None:
        self._on_loop(lambda: self.faults.force_rebalance(group_id))

    def expire_member(self, group_id: str, member_id: str) -> None:
        """Run the member's session timeout now (Kafka does not expire a member parked in a join/sync);
        a consumer group's member is fenced (:meth:`fence_member`)."""
        self._on_loop(lambda: self.faults.expire_member(group_id, member_id))

    def fence_member(self, group_id: str, member_id: str) -> None:
        """KIP-848: remove a consumer group member as a timeout would; its next heartbeat gets UNKNOWN_MEMBER_ID."""
        self._on_loop(lambda: self.faults.fence_member(group_id, member_id))

    def bump_epoch(self, group_id: str) -> int:
        """KIP-848: bump a consumer group's epoch; the next heartbeat computes a new target. The new epoch."""
        return self._on_loop(lambda: self.faults.bump_epoch(group_id))

    # -- time ---------------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Move a manual clock (``manual_clock=True``) forward, firing every timer that became due."""
        self._on_loop(lambda: self.server.advance(ms))

    def wait_for_group(self, group_id: str, *, state: str | None = None, generation_at_least: int | None = None,
                       members: int | None = None, timeout: float = 30.0, polling: Iterable[Any] = (),
                       until: Callable[[], bool] | None = None) -> AnyGroupView:
        """Block until the group matches; raise TimeoutError naming what was last seen. For a KIP-848
        consumer group ``state`` is Empty/Assigning/Reconciling/Stable and ``generation_at_least`` compares
        the group epoch. ``polling=[consumer, ...]`` polls kafka-python or confluent-kafka consumers (or calls
        callables) while waiting, since those clients join only inside ``poll()``; records fetched meanwhile
        are sought back, so the test still reads them (see :mod:`rebalance_lab.client_polling`). ``until``
        also waits for a condition of the test's own, e.g. ``lambda: all(c.assignment() for c in consumers)``
        (a client applies its assignment at the poll after the coordinator sent it)."""
        deadline = time.monotonic() + timeout
        with BackgroundPolling(polling) as polled:
            hint = "" if polled else _POLL_HINT
            while True:
                view = self._matched(group_id, state, generation_at_least, members, deadline, timeout, hint)
                if view is not None and (until is None or _holds(until, polled)):
                    return view
                if view is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"group {group_id!r} matched ({_summary(view)}) but until() was still "
                                       f"false after {timeout}s")
                polled.round()
                time.sleep(_POLL_ROUND_S)

    async def wait_for_group_async(self, group_id: str, *, state: str | None = None,
                                   generation_at_least: int | None = None, members: int | None = None,
                                   timeout: float = 30.0) -> AnyGroupView:
        deadline = time.monotonic() + timeout
        while (view := self._matched(group_id, state, generation_at_least, members, deadline, timeout)) is None:
            await asyncio.sleep(_POLL_ROUND_S)
        return view

    def _matched(self, group_id: str, state: str | None, generation_at_least: int | None, members: int | None,
                 deadline: float, timeout: float, hint: str = "") -> AnyGroupView | None:
        """The group's view if it matches; None to keep waiting; TimeoutError past the deadline."""
        view = self.group(group_id)
        if _matches(view, state, generation_at_least, members):
            return view
        if time.monotonic() > deadline:
            hint = hint if view is None or not view.members else ""  # nobody joined: perhaps nobody polled
            raise TimeoutError(f"group {group_id!r} did not reach state={state} generation>="
                               f"{generation_at_least} members={members} in {timeout}s; last seen: "
                               f"{_summary(view)}{hint}")
        return None


def _holds(until: Callable[[], bool], polled: BackgroundPolling) -> bool:
    with polled.paused():  # the condition reads consumers: none of confluent-kafka's is inside poll()
        return until()


_POLL_ROUND_S = 0.02  # how often a wait looks at the group (consumers are polled by threads of their own)
_POLL_HINT = (" (kafka-python and confluent-kafka consumers join only inside poll(): "
              "wait_for_group(..., polling=[consumer]) polls them while waiting)")


def _generation(view: AnyGroupView) -> int:
    """A classic group's generation, a consumer group's group epoch."""
    return view.group_epoch if isinstance(view, ConsumerGroupView) else view.generation_id


def _matches(view: AnyGroupView | None, state: str | None, generation_at_least: int | None,
             members: int | None) -> bool:
    if view is None:
        return False
    if state is not None and view.state != state:
        return False
    if generation_at_least is not None and _generation(view) < generation_at_least:
        return False
    return members is None or len(view.members) == members


def _summary(view: AnyGroupView | None) -> str:
    if view is None:
        return "no such group"
    label = "epoch" if isinstance(view, ConsumerGroupView) else "generation"
    return f"state={view.state} {label}={_generation(view)} members={len(view.members)}"


__all__ = ["AnyGroupView", "ConsumerGroupView", "Emulator", "EmulatorConfig", "Flavor", "GroupConfig", "GroupView",
           "make_config"]
