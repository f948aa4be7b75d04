"""Benchmark: one client integration test against the emulator and against a real Kafka 4.x broker.

    .venv/bin/python benchmarks/emulator_vs_broker.py [--runs N] [--records N] [--skip-broker] [--image]

The test, the same code and settings on both targets (aiokafka, classic consumer groups):

1. create a topic of 6 partitions;
2. three consumers join one group (manual commits after every batch) until they hold
   disjoint partitions covering the topic;
3. produce N keyed records; the three consume them all;
4. one consumer leaves (LeaveGroup); the two others rebalance until they cover the topic;
5. produce N more records; the two consume them all (every key of 2N seen).

Targets, start-up included in the timing:

* (a) the emulator started in-process (``rebalance_lab.api.Emulator``), as a test using the Python API or
  the pytest plugin does; the package is imported by the warm-up run, as by a test session's first test;
* (a') the emulator as a process of its own (``rebalance-lab serve``), from its launch until it prints its
  bootstrap address: start-up with a fresh interpreter's imports, the analogue of a container;
* (b) a Kafka 4.x broker in Testcontainers (``tests/support/kafka_broker.py``: the image
  built locally on Podman, ``apache/kafka`` with Docker), from ``container.start()`` until it
  serves metadata and a group coordinator, then the test.
* (c), with ``--image``: the emulator's own image (``docker/emulator/``) in Testcontainers,
  started and awaited the same way as the broker.

Both run with ``group.initial.rebalance.delay.ms=0``, one ``__consumer_offsets`` partition
and a 6 s minimum session timeout; the clients use a 6 s session timeout and 100 ms
heartbeats. The container engine and the image are made ready before any timing. Prints every
run, then min/median of each target and the ratio of the medians (goal: emulator >= 20x
faster). Runs alternate between targets so that load on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402
from startup import process_cpu_s  # noqa: E402  (a sibling script: benchmarks/ is the script's folder)

from rebalance_lab.api import Emulator  # noqa: E402

PARTITIONS = 6
CONSUMERS = 3
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 100
STEP_TIMEOUT = 60.0
# The broker settings of both targets (the Kafka side's names; the emulator's options below).
BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "group.min.session.timeout.ms": "6000",
}
EMULATOR_OPTIONS: dict[str, Any] = {
    "initial_rebalance_delay_ms": 0,
    "offsets_topic_num_partitions": 1,
    "min_session_timeout_ms": 6000,
}
# The same as `serve` options, for (c) the emulator's image.
IMAGE_ARGUMENTS = [
    "--initial-rebalance-delay-ms",
    "0",
    "--offsets-topic-partitions",
    "1",
    "--min-session-timeout-ms",
    "6000",
]


@dataclass
class Run:
    target: str
    startup: float = 0.0
    test: float = 0.0
    teardown: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)
    server_cpu: float | None = None  # a serve process's CPU from its launch to the test's end (all threads)

    @property
    def total(self) -> float:
        """Start-up + test: the figure compared (tear-down is shown apart)."""
        return self.startup + self.test

    def line(self) -> str:
        steps = " ".join(f"{name}={seconds:.2f}" for name, seconds in self.steps.items())
        cpu = "" if self.server_cpu is None else f"; server CPU {self.server_cpu:.2f} s"
        return (
            f"{self.target:9} total {self.total:7.2f} s = start-up {self.startup:6.2f} + test {self.test:6.2f}"
            f"  (tear-down {self.teardown:5.2f}; {steps}{cpu})"
        )


class Member:
    """An aiokafka consumer that reads, commits after every batch and records what it holds."""

    def __init__(self, bootstrap: str, group: str, topic: str, index: int, seen: set[bytes]) -> None:
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=f"bench-member-{index}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        )
        self.seen = seen
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=100)
            for records in batches.values():
                self.seen.update(record.key for record in records if record.key is not None)
            if batches:
                await self.consumer.commit()

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            if not self.task.cancelled() and self.task.exception() is not None:
                raise RuntimeError("a consumer failed") from self.task.exception()
        await self.consumer.stop()  # LeaveGroup


async def _until(what: str, condition: Callable[[], bool], members: list[Member]) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while not condition():
        for member in members:
            if member.task is not None and member.task.done():
                await member.task  # raises the consumer's error
        if time.monotonic() > deadline:
            held = [sorted(m.partitions()) for m in members]
            raise TimeoutError(f"{what}: not after {STEP_TIMEOUT:.0f} s (partitions held: {held})")
        await asyncio.sleep(0.005)


def _covers(members: list[Member]) -> bool:
    held = [m.partitions() for m in members]
    return all(held) and sum(len(h) for h in held) == PARTITIONS and set().union(*held) == set(range(PARTITIONS))


async def _produce(producer: AIOKafkaProducer, topic: str, keys: list[bytes]) -> None:
    sends = [await producer.send(topic, key=key, value=b"v" * 100) for key in keys]
    await asyncio.gather(*sends)


async def client_test(bootstrap: str, records: int, steps: dict[str, float]) -> None:
    """The integration test itself; ``steps`` gets the time of each step."""
    mark = time.perf_counter()

    def step(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        steps[name] = now - mark
        mark = now

    topic, group = f"bench-{uuid.uuid4().hex[:8]}", f"bench-group-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-admin")
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        await admin.close()
    step("topic")
    seen: set[bytes] = set()
    members = [Member(bootstrap, group, topic, i, seen) for i in range(CONSUMERS)]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=1)
    await producer.start()
    try:
        await asyncio.gather(*(m.start() for m in members))
        await _until("three consumers form the group", lambda: _covers(members), members)
        step("join3")
        first = [f"first-{i}".encode() for i in range(records)]
        await _produce(producer, topic, first)
        await _until("the three consume every record", lambda: seen.issuperset(first), members)
        step("consume1")
        leaving = members.pop()
        await leaving.stop()
        await _until("the two rebalance", lambda: _covers(members), members)
        step("rebalance2")
        second = [f"second-{i}".encode() for i in range(records)]
        await _produce(producer, topic, second)
        await _until("the two consume every record", lambda: seen.issuperset(second), members)
        step("consume2")
    finally:
        for member in members:
            await member.stop()
        await producer.stop()
    step("close")
    if not seen.issuperset(first + second):
        raise AssertionError("records were lost")


async def run_emulator(records: int) -> Run:
    run = Run("emulator")
    started = time.perf_counter()
    emulator = Emulator(**EMULATOR_OPTIONS)
    await emulator.__aenter__()
    try:
        run.startup = time.perf_counter() - started
        began = time.perf_counter()
        await client_test(emulator.bootstrap_servers, records, run.steps)
        run.test = time.perf_counter() - began
    finally:
        stopping = time.perf_counter()
        await emulator.__aexit__(None, None, None)
        run.teardown = time.perf_counter() - stopping
    return run


SERVE_COMMAND = [sys.executable, "-c", "from rebalance_lab.cli import main; main()", "serve", "--port", "0"]
# serve's bytecode, as an installed package has it (pip compiles it): with PYTHONDONTWRITEBYTECODE set (some
# sandboxes set it) every start would compile each module again; the warm-up run fills this cache
SERVE_PYCACHE = tempfile.mkdtemp(prefix="emulator-vs-broker-pycache-")


def run_serve_process(records: int, source: str | None = None) -> Run:
    """(a'): ``rebalance-lab serve`` in a process of its own, timed from its launch, like the broker's container;
    with ``source``, the package of that checkout (``--compare``)."""
    run = Run("serve" if source is None else f"serve[{Path(source).name}]")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = SERVE_PYCACHE if source is None else f"{SERVE_PYCACHE}-{Path(source).name}"
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(source).resolve()), env.get("PYTHONPATH")) if p)
    started = time.perf_counter()
    # from a folder of no package, as an installed command runs (``-c`` puts the working directory on sys.path)
    proc = subprocess.Popen([*SERVE_COMMAND, *IMAGE_ARGUMENTS], stdout=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir())
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if "bootstrap servers: " not in first:
            raise RuntimeError(f"rebalance-lab serve did not start: {first!r}")
        run.startup = time.perf_counter() - started
        began = time.perf_counter()
        asyncio.run(client_test(first.rsplit(" ", 1)[1].strip(), records, run.steps))
        run.test = time.perf_counter() - began
        run.server_cpu = process_cpu_s(proc.pid)
    finally:
        stopping = time.perf_counter()
        proc.terminate()
        proc.communicate(timeout=30)
        run.teardown = time.perf_counter() - stopping
    return run


def run_broker(engine: object, records: int) -> Run:
    from tests.support.kafka_broker import normalize_settings, start_container_broker

    run = Run("kafka")
    started = time.perf_counter()
    broker = start_container_broker(engine, "4", normalize_settings("4", BROKER_SETTINGS))  # type: ignore[arg-type]
    try:
        run.startup = time.perf_counter() - started
        began = time.perf_counter()
        asyncio.run(client_test(broker.bootstrap, records, run.steps))
        run.test = time.perf_counter() - began
    finally:
        stopping = time.perf_counter()
        broker.stop()
        run.teardown = time.perf_counter() - stopping
    run.target = f"kafka {broker.version}"
    return run


def run_emulator_image(image: str, records: int) -> Run:
    """(c), with --image: the emulator's container image, started and awaited like the broker."""
    from testcontainers.core.container import DockerContainer

    from tests.support.kafka_broker import free_port, wait_until_ready

    run = Run("emu image")
    port = free_port()
    container = DockerContainer(image)
    container.with_env("REBALANCE_LAB_ADVERTISED_HOST", "127.0.0.1")
    container.with_env("REBALANCE_LAB_ADVERTISED_PORT", str(port))
    container.with_command(IMAGE_ARGUMENTS)
    container.with_name(f"rebalance-lab-emulator-{os.getpid()}-{port}")
    ports: dict[str, Any] = container.ports
    ports["9092/tcp"] = ("127.0.0.1", port)
    bootstrap = f"127.0.0.1:{port}"
    started = time.perf_counter()
    try:
        container.start()
        wait_until_ready(bootstrap, 60.0)
        run.startup = time.perf_counter() - started
        began = time.perf_counter()
        asyncio.run(client_test(bootstrap, records, run.steps))
        run.test = time.perf_counter() - began
    finally:
        stopping = time.perf_counter()
        container.stop()
        run.teardown = time.perf_counter() - stopping
    return run


def _summary(name: str, runs: list[Run]) -> float:
    totals = [r.total for r in runs]
    median = statistics.median(totals)
    startups = statistics.median(r.startup for r in runs)
    tests = statistics.median(r.test for r in runs)
    cpus = [r.server_cpu for r in runs if r.server_cpu is not None]
    cpu = f", median server CPU {statistics.median(cpus):.2f} s" if cpus else ""
    print(
        f"{name:9} min {min(totals):7.2f} s  median {median:7.2f} s  "
        f"(median start-up {startups:.2f} s, median test {tests:.2f} s{cpu}; {len(runs)} runs; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    return median


def _report(emulator_runs: list[Run], serve_runs: list[Run], others: list[list[Run]], broker_runs: list[Run]) -> None:
    """Each target's min and median, then the ratios of the medians to the broker's."""
    emulator_median = _summary("emulator", emulator_runs)
    serve_median = _summary("serve", serve_runs)
    medians = {runs[0].target: _summary(runs[0].target, runs) for runs in others if runs}
    if not broker_runs:
        return
    broker_median = _summary("kafka", broker_runs)
    best = min(r.total for r in broker_runs) / min(r.total for r in emulator_runs)
    print(f"ratio (kafka / emulator): {broker_median / emulator_median:.1f}x on medians, {best:.1f}x on minimums "
          f"(goal: >= 20x)")
    print(f"ratio (kafka / serve process): {broker_median / serve_median:.1f}x on medians, "
          f"{min(r.total for r in broker_runs) / min(r.total for r in serve_runs):.1f}x on minimums (goal: >= 20x)")
    for target, median in medians.items():
        print(f"ratio (kafka / {target}): {broker_median / median:.1f}x on medians")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="repetitions of each target (default: 3)")
    parser.add_argument("--records", type=int, default=300, help="records produced before and after the leave")
    parser.add_argument("--skip-broker", action="store_true", help="only the emulator")
    parser.add_argument("--image", action="store_true", help="also (c): the emulator's container image")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also run the serve process of the package in DIR (e.g. a git worktree of another "
                        "commit), in turns with this one's (repeatable)")
    args = parser.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # "Heartbeat failed ... rebalancing" is expected

    emulator_runs: list[Run] = []
    serve_runs: list[Run] = []
    compared: dict[str, list[Run]] = {source: [] for source in args.compare}
    broker_runs: list[Run] = []
    image_runs: list[Run] = []
    asyncio.run(run_emulator(args.records))  # warm-up: first-use costs of the client library
    run_serve_process(args.records)  # warm-up: serve's bytecode cache (and the dataclass method cache beside it)
    for source in compared:
        run_serve_process(args.records, source)
    engine_cm: contextlib.AbstractContextManager[object] = contextlib.nullcontext(None)
    if not args.skip_broker or args.image:
        from tests.support.container_engine import container_engine
        from tests.support.kafka_broker import IMAGE_ENV, load_build_script

        engine_cm = container_engine()
    with engine_cm as engine:
        local = engine is not None and getattr(engine, "local_images_only", False)
        if local and not args.skip_broker:
            # The image, before any timing; named so that starting a broker does not look for it again.
            os.environ[IMAGE_ENV["4"]] = load_build_script().build(["4"])["4"]
        image = os.environ.get("REBALANCE_LAB_EMULATOR_IMAGE", "")
        if args.image and not image:
            image = load_build_script().build_emulator() if local else ""
            if not image:
                parser.error("with a Docker engine, name the emulator's image in REBALANCE_LAB_EMULATOR_IMAGE")
        for i in range(args.runs):
            jobs: list[tuple[list[Run], Callable[[], Run]]] = [
                (emulator_runs, lambda: asyncio.run(run_emulator(args.records))),
                (serve_runs, lambda: run_serve_process(args.records)),
            ]
            jobs += [(runs, functools.partial(run_serve_process, args.records, source))
                     for source, runs in compared.items()]
            if args.image:
                jobs.append((image_runs, lambda: run_emulator_image(image, args.records)))
            if not args.skip_broker:
                jobs.append((broker_runs, lambda: run_broker(engine, args.records)))
            for runs, job in jobs:
                result = job()
                runs.append(result)
                print(f"run {i + 1}: {result.line()}", flush=True)
    shutil.rmtree(SERVE_PYCACHE, ignore_errors=True)
    for source in compared:
        shutil.rmtree(f"{SERVE_PYCACHE}-{Path(source).name}", ignore_errors=True)
    print()
    _report(emulator_runs, serve_runs, [*compared.values(), image_runs], broker_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
