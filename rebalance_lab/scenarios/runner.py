"""Run a scenario against any bootstrap address and produce its normalised transcript.

Nothing here assumes the emulator: the coordinator is found with FindCoordinator,
topics are created through the protocol, and waits are real waits.

Collection rules (what makes transcripts timing-independent):

* ``wait: answered`` (default) -- the step waits for every answer and records them;
* ``wait: parked`` -- the step waits ``settle_ms`` and records each request as
  ``parked`` (or its answer, if one came); parked answers are recorded later by an
  ``await`` step naming the member;
* ``wait: none`` -- nothing is recorded until an ``await`` step;
* member ids and generations are learnt when an answer is recorded, so a member whose
  answer is still parked acts on what it knew before;
* concurrent sends are spaced by ``stagger_ms`` so they reach the broker in the order
  written; inside a step, entries follow that order, never arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebalance_lab.clients.member import wire
from rebalance_lab.clients.member.connection import ConnectionLost
from rebalance_lab.scenarios import actions, consumer_actions, topic_steps
from rebalance_lab.scenarios import requests as rq
from rebalance_lab.scenarios.context import RunContext
from rebalance_lab.scenarios.loader import load_scenario
from rebalance_lab.scenarios.model import Scenario, Step
from rebalance_lab.scenarios.normalise import Normaliser
from rebalance_lab.scenarios.session import Session
from rebalance_lab.scenarios.transcript import (
    ANSWERED,
    CLOSED,
    PARKED,
    TIMED_OUT,
    UNANSWERED,
    Entry,
    StepRecord,
    Transcript,
)
from rebalance_lab.scenarios.verify import check_expectations

ScenarioSource = str | Path | Mapping[str, Any] | Scenario
_SETUP_ATTEMPTS, _SETUP_PAUSE_S = 300, 0.1
_NOT_READY = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
_BUILDERS = {**actions.BUILDERS, **consumer_actions.BUILDERS}


@dataclass
class InFlight:
    who: str
    api: str
    version: int
    future: asyncio.Future[Any]
    sort_topics: bool = False
    on_response: Callable[[Any], None] | None = None  # runs when the answer is recorded


class ScenarioRun:
    def __init__(self, scenario: Scenario, bootstrap: str) -> None:
        self.scenario = scenario
        self.ctx = RunContext(scenario)
        self.session = Session(bootstrap, scenario.versions)
        self.transcript = Transcript(scenario.name, bootstrap)
        self.pending: dict[str, list[InFlight]] = {}
        self._special: dict[str, Callable[[Step, StepRecord], Any]] = {
            "await": self._await, "wait_ms": self._wait_ms, "close": self._close,
            **{name: self._topic_step for name in topic_steps.STEPS},
        }

    async def run(self) -> Transcript:
        try:
            await self._prepare()
            for index, step in enumerate(self.scenario.steps, 1):
                record = StepRecord(index, step.label())
                await self._execute(step, record)
                self.transcript.steps.append(record)
            self._record_leftovers()
        finally:
            self.session.close()
        self._finalise()
        return self.transcript

    def _finalise(self) -> None:
        """Alias ids in transcript order, then check every step's ``expect``."""
        topics = {actual: name for name, actual in self.ctx.topics.items()}
        ids = {topic_id: name for name, topic_id in self.ctx.topic_ids.items()}
        normaliser = Normaliser(self.ctx.identities, self.ctx.actual_to_name, topics, ids, self.ctx.suffix)
        for record in self.transcript.steps:
            for entry in record.entries:
                if entry.raw is not None:
                    entry.fields = normaliser.response(entry.api, entry.raw, entry.sort_topics)
                    entry.raw = None
        for step, record in zip(self.scenario.steps, self.transcript.steps, strict=False):
            self.transcript.failures.extend(check_expectations(step, record))

    async def _execute(self, step: Step, record: StepRecord) -> None:
        special = self._special.get(step.action)
        if special is not None:
            await special(step, record)
            return
        outgoing = _BUILDERS[step.action](self.ctx, step)
        flights = []
        for i, out in enumerate(outgoing):
            if i and self.scenario.stagger_ms:
                await self._pause(self.scenario.stagger_ms)
            flights.append(await self._send(out))
        await self._settle(step, record, flights)

    async def _send(self, out: actions.Outgoing) -> InFlight:
        conn = await self.session.connection(out.who, out.group_id, out.client_id, out.connection)
        version = self.session.version(conn, out.api, out.version)
        future = conn.send(out.build(version))
        return InFlight(out.who, out.api, version, future, out.sort_topics, out.on_response)

    async def _settle(self, step: Step, record: StepRecord, flights: list[InFlight]) -> None:
        if step.wait == "none":
            self._park(flights)
            return
        if step.wait == "parked":
            await self._pause(self.scenario.settle_ms)
            self._park([f for f in flights if not f.future.done()])
            record.entries.extend(self._entry(f) if f.future.done() else self._mark(f, PARKED) for f in flights)
            return
        await self._wait_all(flights, self._timeout(step))
        record.entries.extend(self._entry(f) for f in flights)

    def _timeout(self, step: Step) -> float:
        return float(step.options.get("timeout_ms", self.scenario.timeout_ms)) / 1000

    async def _wait_all(self, flights: list[InFlight], timeout_s: float) -> None:
        futures = [f.future for f in flights if not f.future.done()]
        if futures:
            await asyncio.wait(futures, timeout=timeout_s)

    def _park(self, flights: list[InFlight]) -> None:
        for flight in flights:
            self.pending.setdefault(flight.who, []).append(flight)

    def _mark(self, flight: InFlight, outcome: str) -> Entry:
        return Entry(flight.who, flight.api, flight.version, outcome)

    def _entry(self, flight: InFlight) -> Entry:
        future = flight.future
        if not future.done():
            return self._mark(flight, TIMED_OUT)
        if future.cancelled() or isinstance(future.exception(), ConnectionLost):
            return self._mark(flight, CLOSED)
        error = future.exception()
        if error is not None:
            return Entry(flight.who, flight.api, flight.version, f"failed: {type(error).__name__}: {error}")
        # Learning (member ids, generations) happens here, in transcript order, not when
        # bytes arrive: a later step then sees exactly what the transcript shows.
        if flight.on_response is not None:
            flight.on_response(future.result())
        body = future.result().to_dict(json=False)
        return Entry(flight.who, flight.api, flight.version, ANSWERED, raw=body, sort_topics=flight.sort_topics)

    # -- steps that send nothing ---------------------------------------------------------------

    async def _await(self, step: Step, record: StepRecord) -> None:
        flights = [f for alias in step.members for f in self.pending.pop(alias, [])]
        await self._wait_all(flights, self._timeout(step))
        record.entries.extend(self._entry(f) for f in flights)

    async def _wait_ms(self, step: Step, record: StepRecord) -> None:
        await self._pause(int(step.options.get("ms", 0)))

    async def _pause(self, ms: int) -> None:
        """The scenario's own time passing (stagger, settle, ``wait_ms``): a real wait here; ``play`` moves a
        manual clock instead."""
        await asyncio.sleep(ms / 1000)

    async def _topic_step(self, step: Step, record: StepRecord) -> None:
        record.entries.append(await topic_steps.STEPS[step.action](self.session, self.ctx, step))

    async def _close(self, step: Step, record: StepRecord) -> None:
        """Drop the members' connections, as a crashed client would; their parked requests
        are forgotten (the broker answers them into a closed socket)."""
        for alias in step.members:
            self.session.close_member(alias)
            for flight in self.pending.pop(alias, []):
                with contextlib.suppress(BaseException):
                    flight.future.exception()

    def _record_leftovers(self) -> None:
        leftovers = [f for flights in self.pending.values() for f in flights]
        if not leftovers:
            return
        record = StepRecord(len(self.transcript.steps) + 1, "end (requests never awaited)")
        record.entries.extend(self._entry(f) if f.future.done() else self._mark(f, UNANSWERED) for f in leftovers)
        self.transcript.steps.append(record)

    # -- set-up -----------------------------------------------------------------------------------

    async def _prepare(self) -> None:
        """Set-up that is not recorded: topics, then a coordinator that has finished loading."""
        await self._create_topics()
        await topic_steps.refresh_topic_ids(self.session, self.ctx, self.scenario.topics)
        for group_id in self.ctx.groups.values():
            await self._wait_until_coordinator_ready(group_id)

    async def _create_topics(self) -> None:
        """CreateTopics where the broker offers it, else Metadata auto-creation."""
        topics = {self.ctx.topic(name): count for name, count in self.scenario.topics.items()}
        if not topics:
            return
        conn = await self.session.bootstrap_connection()
        if rq.API_KEYS["CreateTopics"] in conn.api_versions:
            await conn.request(rq.create_topics(self.session.version(conn, "CreateTopics"), topics))
        version = self.session.version(conn, "Metadata")
        for _ in range(_SETUP_ATTEMPTS):
            response = await conn.request(wire.metadata_request(list(topics), version, auto_create=True))
            if all(t.error_code == 0 and t.partitions for t in response.topics):
                return
            await asyncio.sleep(_SETUP_PAUSE_S)

    async def _wait_until_coordinator_ready(self, group_id: str) -> None:
        """A fresh broker answers COORDINATOR_LOAD_IN_PROGRESS (or NOT_AVAILABLE) for a while
        after FindCoordinator succeeds; describing the group (which creates nothing) until it
        stops keeps that warm-up out of the first recorded step."""
        conn = await self.session.connection(actions.ADMIN, group_id, actions.ADMIN)
        version = self.session.version(conn, "DescribeGroups")
        for _ in range(_SETUP_ATTEMPTS):
            response = await conn.request(rq.describe(version, [group_id], False))
            if response.groups[0].error_code not in _NOT_READY:
                return
            await asyncio.sleep(_SETUP_PAUSE_S)


async def run_scenario_async(source: ScenarioSource, bootstrap: str) -> Transcript:
    """Run a scenario (YAML path, mapping or :class:`Scenario`) against ``bootstrap``."""
    return await ScenarioRun(load_scenario(source), bootstrap).run()


def run_scenario(source: ScenarioSource, bootstrap: str) -> Transcript:
    """Blocking form of :func:`run_scenario_async` (for the CLI; not inside a running loop)."""
    return asyncio.run(run_scenario_async(source, bootstrap))
