"""``rebalance-lab play SCENARIO``: a packaged (or any) scenario played on an in-process emulator, for learning.

Each step prints its requests (``a -> JoinGroup v9``) and answers (``a <- NONE generation_id=1 ...``), and the
coordinator's narration (:mod:`rebalance_lab.observe.narrator`, which has one level: its full explanation)
appears between them, as it happens. With ``--explain`` every answer is printed whole (the transcript's
normalised fields). With ``--step`` the player waits for Enter before each step; end of input (``< /dev/null``)
means "go on without waiting".

The emulator runs on a manual clock, so a scenario's timing is exact and instant: the scenario's own time (the
``stagger_ms`` between sends, ``settle_ms`` before calling a request parked, ``wait_ms`` steps) moves the clock,
and while answers are awaited and nothing arrives, the clock jumps to the coordinator's next timer (an initial
delay ending, a session expiring), never further than the step's timeout. Timers thus fire in the order they
would on a broker; only wall-clock effects of a real run (a few ms of network between requests) are absent.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer, WorldHook
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe.recording_file import RecordingFile
from rebalance_lab.scenarios.actions import Outgoing
from rebalance_lab.scenarios.compare import emulator_config
from rebalance_lab.scenarios.model import Scenario, ScenarioError, Step
from rebalance_lab.scenarios.normalise import Normaliser
from rebalance_lab.scenarios.requests import API_KEYS
from rebalance_lab.scenarios.runner import InFlight, ScenarioRun
from rebalance_lab.scenarios.transcript import ANSWERED, Entry, StepRecord, Transcript

WIDTH = 100
_CATCH_UP_S = 0.03  # real time for the in-process server to answer what was sent, before the clock moves
_PARKED_S = 0.2  # a request the server has read and not answered in this long is parked (waits for a timer)
_FLAVOR_LINES = {"4": Flavor.KAFKA_4, "3": Flavor.KAFKA_3}
_QUIET = frozenset({"error_code", "throttle_time_ms", "error_message", "skip_assignment", "protocol_type"})


@dataclass(frozen=True)
class PlayOptions:
    flavor: Flavor | None = None  # default: the scenario's first release line, else kafka-4
    explain: bool = False
    step: bool = False
    record_path: str | None = None


def flavor_for(scenario: Scenario, asked: Flavor | None) -> Flavor:
    """The flavor to play on; a scenario written for one release line refuses the other."""
    lines = [_FLAVOR_LINES[line] for line in scenario.flavors if line in _FLAVOR_LINES]
    if asked is None:
        return lines[0] if lines else Flavor.KAFKA_4
    if lines and asked not in lines:
        wanted = " or ".join(f.value for f in lines)
        raise ScenarioError(f"scenario {scenario.name} is written for {wanted}, not {asked.value}")
    return asked


class StepGate:
    """``--step``: wait for Enter before each step; at end of input stop waiting (so CI can pipe /dev/null)."""

    def __init__(self, stdin: IO[str] | None, out: IO[str]) -> None:
        self._stdin = stdin
        self._out = out

    async def wait(self, label: str) -> None:
        if self._stdin is None:
            return
        self._out.write(f"-- Enter to send step {label} --\n")
        self._out.flush()
        line = await asyncio.get_running_loop().run_in_executor(None, self._stdin.readline)
        if line == "":
            self._stdin = None  # end of input: play the rest without waiting


def answer_text(fields: dict[str, Any], width: int = WIDTH) -> str:
    """An answer in one line of at most ``width`` columns: its error name, then the fields that say something."""
    parts = [str(fields["error_code"])] if "error_code" in fields else []
    for key, value in fields.items():
        if key in _QUIET or value in (None, "", [], {}):
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            inner = "; ".join(answer_text(item, WIDTH) for item in value)
            parts.append(f"{key}=[{inner}]")
        else:
            parts.append(f"{key}={value}")
    return _fit(" ".join(parts), width)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class PlayRun(ScenarioRun):
    """A scenario run that prints as it goes and drives the emulator's manual clock."""

    def __init__(self, scenario: Scenario, server: EmulatorServer, out: IO[str], explain: bool,
                 gate: StepGate) -> None:
        super().__init__(scenario, server.bootstrap_servers)
        self._server = server
        self._out = out
        self._explain = explain
        self._gate = gate
        # requests read by the server, and the count each of ours waits for: the clock may jump only once every
        # awaited request has been read and its answer has had time to come (so it is parked, not slow)
        self._seen: Counter[tuple[str, int]] = Counter()
        self._expected: dict[tuple[str, int], int] = {}
        self._targets: dict[int, tuple[tuple[str, int], int]] = {}
        server.add_request_observer(self._on_request)

    def say(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    async def _execute(self, step: Step, record: StepRecord) -> None:
        label = _fit(f"{record.index}: {step.label()}", WIDTH - len("-- Enter to send step  --"))
        await self._gate.wait(label)
        self.say(f"step {label}")
        await super()._execute(step, record)
        for entry in record.entries:
            self._print_entry(entry)

    async def _send(self, out: Outgoing) -> InFlight:
        key = (out.client_id, API_KEYS[out.api])
        self._expected[key] = max(self._expected.get(key, 0), self._seen[key]) + 1
        flight = await super()._send(out)
        self._targets[id(flight.future)] = (key, self._expected[key])
        self.say(f"  {flight.who} -> {flight.api} v{flight.version}")
        return flight

    def _seen_by_server(self, flight: InFlight) -> bool:
        """The coordinator has read the request (by client id and API: the n-th one sent, the n-th read)."""
        key, target = self._targets.get(id(flight.future), (("", -1), 0))
        return self._seen[key] >= target

    def _on_request(self, api_key: int, api_version: int, client_id: str | None) -> None:
        self._seen[(client_id or "", api_key)] += 1

    def _print_entry(self, entry: Entry) -> None:
        if entry.outcome != ANSWERED or entry.raw is None:
            self.say(f"  {entry.who} <- {entry.api}: {entry.outcome}")
            return
        fields = self._normaliser().response(entry.api, entry.raw, entry.sort_topics)
        if self._explain:
            self.say(f"  {entry.who} <- {entry.api} v{entry.version}")
            self._out.write("".join(line + "\n" for line in Entry(entry.who, entry.api, entry.version, ANSWERED,
                                                                   fields).lines()[1:]))
        else:
            prefix = f"  {entry.who} <- "
            self.say(prefix + answer_text(fields, WIDTH - len(prefix)))

    def _normaliser(self) -> Normaliser:
        """Ids known so far as ``<alias>`` (the final transcript aliases them once the run is over). A copy of
        the run's identities: normalising labels unknown ids, which would keep a member from learning its own."""
        topics = {actual: name for name, actual in self.ctx.topics.items()}
        ids = {topic_id: name for name, topic_id in self.ctx.topic_ids.items()}
        return Normaliser(copy.deepcopy(self.ctx.identities), self.ctx.actual_to_name, topics, ids, self.ctx.suffix)

    # -- the manual clock ----------------------------------------------------------------------------

    async def _pause(self, ms: int) -> None:
        await asyncio.sleep(_CATCH_UP_S)
        if ms > 0:
            self._advance(ms)
            await asyncio.sleep(_CATCH_UP_S)

    def _advance(self, ms: int) -> None:
        self._server.advance(ms)

    async def _wait_all(self, flights: list[InFlight], timeout_s: float) -> None:
        """Wait for the answers; while none comes, jump to the next timer, at most ``timeout_s`` of clock."""
        budget_ms, deadline = int(timeout_s * 1000), time.monotonic() + timeout_s
        while True:
            futures = [f.future for f in flights if not f.future.done()]
            if not futures or time.monotonic() >= deadline:
                return  # answered, or nothing will answer: the entry says timeout, as on a real run
            await asyncio.wait(futures, timeout=_CATCH_UP_S * 3)
            if all(f.future.done() for f in flights):
                return
            if not all(self._seen_by_server(f) for f in flights if not f.future.done()):
                continue  # a slow machine: the request is still on its way in
            await asyncio.wait(futures, timeout=_PARKED_S)
            if all(f.future.done() for f in flights):
                return
            world = self._server.world
            due = world.next_deadline()
            if due is None or budget_ms <= 0:
                continue
            step_ms = max(0, min(due - world.now_ms(), budget_ms))
            self.say(f"  (clock +{step_ms} ms: the coordinator's next timer)")
            budget_ms -= step_ms
            self._advance(step_ms)


def _narrator_hook(out: IO[str]) -> WorldHook:
    def install(world: World) -> None:
        from rebalance_lab.observe import narrator

        narrator.install(world, out)

    return install


def _record_hook(path: str) -> tuple[WorldHook, RecordingFile]:
    out = RecordingFile(path)

    def install(world: World) -> None:
        from rebalance_lab.observe import recorder

        recorder.install(world, out)

    return install, out


def play_config(scenario: Scenario, flavor: Flavor) -> EmulatorConfig:
    config = emulator_config(scenario.initial_rebalance_delay_ms, flavor, scenario.min_session_timeout_ms,
                             scenario.broker)
    return dataclasses.replace(config, manual_clock=True)


async def play_async(scenario: Scenario, out: IO[str], options: PlayOptions,
                     stdin: IO[str] | None = None) -> Transcript:
    """Play ``scenario``; the printed transcript goes to ``out``, the final (normalised) one is returned."""
    flavor = flavor_for(scenario, options.flavor)
    scenario = dataclasses.replace(scenario, unique_names=False)  # a fresh emulator: the scenario's own names
    config = play_config(scenario, flavor)
    hooks: list[WorldHook] = []
    opened: list[RecordingFile] = []
    if options.record_path:
        hook, recording = _record_hook(options.record_path)
        hooks.append(hook)
        opened.append(recording)
    server = EmulatorServer(config, world_hooks=(*hooks, _narrator_hook(out)))
    out.write(f"scenario {scenario.name} on {flavor.value} (manual clock)\n")
    if scenario.lesson:
        out.write(textwrap.fill(scenario.lesson, WIDTH) + "\n")
    if scenario.description:
        out.write(textwrap.fill(" ".join(scenario.description.split()), WIDTH) + "\n")
    try:
        async with server:
            gate = StepGate(stdin if options.step else None, out)
            transcript = await PlayRun(scenario, server, out, options.explain, gate).run()
    finally:
        for recording in opened:
            recording.close()
    for failure in transcript.failures:
        out.write(f"unexpected: {failure}\n")
    return transcript
