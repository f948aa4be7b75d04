"""``serve`` makes what a client's first minute needs right after it listens, a short step per loop turn (issue 22).

rebalance_lab/warm_up.py: the handlers of the common APIs and their codec plans are made while the process waits
for requests; a request that arrives meanwhile waits for the step in progress only.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable

import pytest

from rebalance_lab import warm_up
from rebalance_lab.coordinator.handlers import HANDLERS

_WRAPPER = """
import signal, sys

def _dump(_signum, _frame):
    from rebalance_lab.protocol import codec
    print("MODULES", " ".join(sorted(sys.modules)), flush=True)
    print("CLASSES", codec._message_class.cache_info().currsize, flush=True)

signal.signal(signal.SIGUSR1, _dump)
from rebalance_lab.cli import main
sys.exit(main())
"""
# What the warm-up leaves to first use: the options' packages and the APIs most clients never ask for
LEFT_TO_FIRST_USE = ("rebalance_lab.observe", "rebalance_lab.replay", "rebalance_lab.control",
                     "rebalance_lab.storage", "rebalance_lab.coordinator.consumer", "rebalance_lab.clients.assignors",
                     "rebalance_lab.security.sasl", "ssl", "rebalance_lab.coordinator.handlers.describe_acls",
                     "rebalance_lab.coordinator.handlers.consumer_group_heartbeat")


def test_a_serve_process_imports_the_handlers_of_a_clients_first_minute_once_it_listens() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, "serve", "--port", "0", "--log-level", "INFO"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert "bootstrap servers: " in proc.stdout.readline()
        done = ""
        while "warm-up done" not in done:
            done = proc.stderr.readline()
            assert done, "serve ended before its warm-up was done"
        proc.send_signal(signal.SIGUSR1)
        modules = set(proc.stdout.readline().split()[1:])
        classes = int(proc.stdout.readline().split()[1])
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert set(warm_up.module_names()) <= modules
    assert classes >= 2 * len(warm_up.PLAN)  # each API's request and response classes
    assert [m for m in modules if m in LEFT_TO_FIRST_USE or m.startswith(tuple(f"{p}." for p in LEFT_TO_FIRST_USE))
            ] == []
    assert "longest step" in done


def test_every_api_of_the_plan_has_a_handler_in_the_table() -> None:
    assert {handler for handler, _modules in warm_up.PLAN} <= set(HANDLERS)


_STEP_SIZES = """
import sys
from rebalance_lab.cli import build_parser, config_from_args
config_from_args(build_parser(serve_only=True).parse_args(["serve"]))
import asyncio, rebalance_lab.emulator, rebalance_lab.security.additional
from rebalance_lab import warm_up
sizes = []
for step in warm_up.steps():
    before = len(sys.modules)
    step.run()
    sizes.append((len(sys.modules) - before, step.name))
print(max(sizes)[0], len(sizes), sum(size for size, _name in sizes))
"""


def test_no_step_of_the_warm_up_imports_more_than_a_few_modules_after_serves_start() -> None:
    """A request waits for the step in progress: each imports one module whose own imports are done (the plan lists
    a handler's new modules, dependencies first); an import added to a handler only lengthens its step."""
    done = subprocess.run([sys.executable, "-c", _STEP_SIZES], capture_output=True, text=True, check=True,
                          cwd=tempfile.gettempdir())
    largest, count, imported = (int(x) for x in done.stdout.split())
    assert largest <= 3, done.stdout
    assert imported >= len(list(warm_up.module_names())) and count > imported


def _steps(names: list[str], action: Callable[[str], None]) -> list[warm_up.Step]:
    return [warm_up.Step(name, lambda name=name: action(name)) for name in names]  # type: ignore[misc]


async def _request_during_steps() -> list[str]:
    """A byte reaches a stream during step 1: when does the task reading it run, among the steps?"""
    events: list[str] = []
    left, right = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=left)

    async def request() -> None:
        await reader.readexactly(1)
        events.append("request")

    task = asyncio.create_task(request())
    await asyncio.sleep(0)  # the task waits for its byte

    def step(name: str) -> None:
        events.append(name)
        if name == "step1":
            right.send(b"x")

    warming = warm_up.WarmUp(asyncio.get_running_loop(), _steps([f"step{i}" for i in range(1, 6)], step)).start()
    await warming.done.wait()
    await task
    writer.close()
    right.close()
    return events


def test_a_request_arriving_during_the_warm_up_waits_for_one_step_at_most() -> None:
    events = asyncio.run(_request_during_steps())
    # the byte arrives during step 1; its reader's callback runs in the next loop turn, before that turn's step 2,
    # and the task it wakes before step 3 (a call_soon chain would run step 3 first)
    assert events.index("request") < events.index("step3")
    assert [e for e in events if e != "request"] == [f"step{i}" for i in range(1, 6)]


def test_a_step_that_fails_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    def step(name: str) -> None:
        if name == "broken":
            raise ImportError("no module named broken")
        ran.append(name)

    async def run() -> warm_up.WarmUp:
        warming = warm_up.WarmUp(asyncio.get_running_loop(), _steps(["a", "broken", "b"], step)).start()
        await warming.done.wait()
        return warming

    warming = asyncio.run(run())
    assert ran == ["a", "b"] and warming.count == 3
    assert "warm-up: broken failed (ImportError: no module named broken)" in caplog.text


def test_a_cancelled_warm_up_runs_no_further_step() -> None:
    ran: list[str] = []

    async def run() -> None:
        warming = warm_up.WarmUp(asyncio.get_running_loop(), _steps(["a", "b", "c"], ran.append)).start()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        warming.cancel()
        assert warming.done.is_set()
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(run())
    assert len(ran) < 3
