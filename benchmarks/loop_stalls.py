"""Benchmark: the longest event-loop stall while one big valid request of each API is served (issue 17, Fairness).

    .venv/bin/python benchmarks/loop_stalls.py [--entries 200000] [--only NAME,...]

Runs an emulator in this process (20 topics of 10,000 partitions: the per-topic cap) with a lag probe on
its loop: a task that sleeps 1 ms over and over and records how late it wakes. For each API it sends one
request listing ``--entries`` entries (200,000: 2-10 MB frames, near ``socket.request.max.bytes`` of
100 MiB only for the largest), waits for the answer, and prints the probe's longest and p99 overshoot,
the frame size and the wall time. Frames of 256 KiB and more are decoded and encoded off the loop, so
what remains is the handler's own work: a stepped handler stalls the loop for a few ms at most.

Some requests list what the server holds rather than what they name: before the probe starts, DescribeAcls and
DeleteAcls get ``--entries`` bindings, ListGroups as many groups, OffsetDelete a group with an offset on each
partition it names, ConsumerGroupDescribe a four-member KIP-848 group over the big topics
(tests/support/big_requests.py, ``WORLD_SETUPS``/``WIRE_SETUPS``). No ``gc.freeze`` here: the server's own
collector policy (connection.FreezeOnGrowth) must keep full collections over the 200,000-partition world
(0.7-1.4 s each without it) out of every request's window.

A turn probe adds the CPU time of the loop's longest turn (``longest turn CPU``): the server's own share of a
stall, which the machine's load does not inflate (on a loaded 2-core machine the lag probe's figure is mostly the
scheduler's). A second probe runs in a thread of its own ("thread stall"): how long another thread of the
process (a test's canary) waits for the GIL, e.g. while the codec thread frames a big answer. The machine may be
shared: each line ends with the 1-minute load average; a stall far above the others at a high load is the
scheduler's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))

from rebalance_lab.config import EmulatorConfig, GroupConfig  # noqa: E402
from rebalance_lab.coordinator.server import EmulatorServer  # noqa: E402
from tests.integration.wire import RawConnection  # noqa: E402
from tests.support.big_requests import (  # noqa: E402
    BUILDERS,
    PARTITIONS,
    TOPICS,
    WIRE_SETUPS,
    WORLD_SETUPS,
    frame,
)


class LagProbe:
    """Sleeps 1 ms at a time on the loop and records how late each wake-up is (the loop's stalls)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags.append((time.perf_counter() - start - 0.001) * 1000)

    def __enter__(self) -> LagProbe:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    def summary(self) -> tuple[float, float]:
        ordered = sorted(self.lags) or [0.0]
        return ordered[-1], ordered[int(0.99 * (len(ordered) - 1))]


class TurnProbe:
    """The CPU time of the loop thread's longest turn (one callback or task step, ``time.thread_time``): what
    the server's own work holds the loop for, whatever the machine's load (a lag probe's figures also count the
    time the scheduler gives other processes). Wraps ``asyncio.events.Handle._run`` while it is on."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._original = asyncio.events.Handle._run

    def __enter__(self) -> TurnProbe:
        original, probe = self._original, self

        def timed(handle: asyncio.events.Handle) -> None:
            started = time.thread_time()
            original(handle)
            probe.longest = max(probe.longest, time.thread_time() - started)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self._original  # type: ignore[method-assign]


class ThreadProbe(LagProbe):
    """The same, from a thread of its own: how long another thread of the process (a test's canary, a client)
    waits for the GIL while the request is served, e.g. while the codec thread holds it in one C call."""

    def __init__(self) -> None:
        super().__init__()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run_thread, name="thread-probe", daemon=True)

    def _run_thread(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            time.sleep(0.001)
            self.lags.append((time.perf_counter() - start - 0.001) * 1000)

    def __enter__(self) -> ThreadProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def measure(server: EmulatorServer, name: str, entries: int) -> str:
    request = await asyncio.to_thread(frame, name, entries)
    broker = server.world.cluster.brokers[0]
    # A one-entry request first, before any setup (ListGroups would list it all): the handler's module is imported
    # on its API's first use (issue 22), a one-time cost of the process, not of the big request measured here
    warm = await RawConnection.open(broker.host, broker.port)
    await warm.send_raw(await asyncio.to_thread(frame, name, 1, 0))
    await warm.read_frame(timeout=60)
    await warm.close()
    if name in WORLD_SETUPS:  # the bindings or groups the request lists, made before the probe starts
        WORLD_SETUPS[name](server.world, entries)
    if name in WIRE_SETUPS:
        await WIRE_SETUPS[name]((broker.host, broker.port), entries)
    conn = await RawConnection.open(broker.host, broker.port)
    started = time.perf_counter()
    with LagProbe() as probe, ThreadProbe() as thread_probe, TurnProbe() as turns:
        await conn.send_raw(request)
        answer = await conn.read_frame(timeout=600)
    wall = time.perf_counter() - started
    await conn.close()
    worst, p99 = probe.summary()
    return (f"{name:26s} entries {entries:>8,} frame {len(request) / 1e6:5.2f} MB answer {len(answer) / 1e6:5.2f} MB "
            f"wall {wall:5.2f} s  loop stall max {worst:6.1f} ms p99 {p99:5.1f} ms  longest turn CPU "
            f"{turns.longest * 1000:5.1f} ms  thread stall max {thread_probe.summary()[0]:6.1f} ms  "
            f"load {os.getloadavg()[0]:4.1f}")


async def main(entries: int, only: list[str]) -> None:
    group = GroupConfig(initial_rebalance_delay_ms=0)
    config = EmulatorConfig(port=0, group=group, topics=tuple((f"big-{t}", PARTITIONS) for t in range(TOPICS)))
    async with EmulatorServer(config) as server:
        for name in only:
            print(await measure(server, name, entries), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--only", default=",".join(BUILDERS), help="comma-separated: " + ",".join(BUILDERS))
    args = parser.parse_args()
    asyncio.run(main(args.entries, [n for n in args.only.split(",") if n]))
