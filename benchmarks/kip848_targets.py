"""The two targets of benchmarks/kip848_scale.py and the light client's connections.

* :class:`Pipe` / :class:`Wire`: raw TCP connections with requests pipelined (Kafka answers a
  connection's requests in order, so each response goes to the oldest waiting callback);
* :class:`EmulatorProcess`: ``rebalance-lab serve`` in its own process;
* :func:`broker_target`: a Kafka 4.4.0 broker from ``tests/support/kafka_broker.py``'s BrokerPool,
  with Kafka's own JVM options by default;
* :func:`cpu_seconds`: a server's CPU time from /proc (a Podman container's processes are this
  host's processes too).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rebalance_lab.protocol import codec


class Pipe(asyncio.Protocol):
    """One TCP connection with requests pipelined; each response goes to the callback of the oldest request
    (Kafka answers a connection's requests in order). Requests sent while responses are being read leave in
    one write."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiting: deque[Callable[[bytes], None]] = deque()
        self.outbox: list[bytes] | None = None
        self.lost: BaseException | None = None

    @classmethod
    async def open(cls, host: str, port: int) -> Pipe:
        _transport, pipe = await asyncio.get_running_loop().create_connection(cls, host, port)
        return pipe

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionError("connection closed")

    def send(self, frame: bytes, on_reply: Callable[[bytes], None]) -> None:
        if self.lost is not None:
            raise ConnectionError(f"connection lost: {self.lost}")
        self.waiting.append(on_reply)
        if self.outbox is not None:
            self.outbox.append(frame)
        else:
            assert self.transport is not None
            self.transport.write(frame)

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        offset, end = 0, len(buf)
        self.outbox = []
        try:
            while end - offset >= 4:
                size = int.from_bytes(buf[offset:offset + 4], "big")
                if end - offset - 4 < size:
                    break
                frame = bytes(buf[offset + 4:offset + 4 + size])
                offset += 4 + size
                self.waiting.popleft()(frame)
        finally:
            del buf[:offset]
            out, self.outbox = self.outbox, None
            if out and self.transport is not None:
                self.transport.write(b"".join(out))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Wire:
    """A few connections to one target; member i always uses connection i % len(pipes)."""

    def __init__(self, pipes: list[Pipe]) -> None:
        self.pipes = pipes
        self.correlation = 0

    @classmethod
    async def open(cls, bootstrap: str, connections: int) -> Wire:
        host, port = bootstrap.rsplit(":", 1)
        return cls([await Pipe.open(host, int(port)) for _ in range(connections)])

    def frame(self, request: Any) -> bytes:
        self.correlation += 1
        return codec.encode_request(request, self.correlation, "kip848-bench")

    async def call(self, api_key: int, version: int, request: Any) -> Any:
        return (await self.call_many([(0, self.frame(request))], api_key, version))[0]

    async def call_many(self, frames: list[tuple[int, bytes]], api_key: int, version: int) -> list[Any]:
        """Send every (connection index, frame) at once; the decoded responses in the same order."""
        results: list[Any] = [None] * len(frames)
        done = asyncio.get_running_loop().create_future()
        remaining = len(frames)

        def answer(i: int) -> Callable[[bytes], None]:
            def on_reply(payload: bytes) -> None:
                nonlocal remaining
                results[i] = codec.decode_response(api_key, version, payload)
                remaining -= 1
                if remaining == 0 and not done.done():
                    done.set_result(None)
            return on_reply

        for i, (conn, frame) in enumerate(frames):
            self.pipes[conn % len(self.pipes)].send(frame, answer(i))
        if frames:
            await self._wait(done)
        return results

    async def _wait(self, done: asyncio.Future[None]) -> None:
        while not done.done():
            lost = [p.lost for p in self.pipes if p.lost is not None]
            if lost:
                raise ConnectionError(f"a connection was lost: {lost[0]}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(done), 1.0)

    def close(self) -> None:
        for p in self.pipes:
            p.close()


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return found


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU of a process and its descendants (a container's processes are the host's too)."""
    if pid is None:
        return None
    total = 0
    for p in _descendants(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class EmulatorProcess:
    """``rebalance-lab serve`` in its own process (one core for the coordinator, as a broker would have)."""

    def __init__(self, *extra: str, source: str | None = None) -> None:
        """``source``: another checkout's directory (e.g. a ``git worktree`` of an older commit) to serve instead."""
        exe = Path(sys.executable).with_name("rebalance-lab")
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([str(exe), "serve", "--port", "0", "--offsets-topic-partitions", "1",
                                      "--initial-rebalance-delay-ms", "0", *extra], stdout=subprocess.PIPE, text=True,
                                     env=env)
        assert self.proc.stdout is not None
        match = re.search(r"bootstrap servers: (\S+:\d+)", self.proc.stdout.readline())
        if match is None:
            self.stop()
            raise RuntimeError("rebalance-lab serve did not start")
        self.bootstrap = match.group(1)
        host, port = self.bootstrap.rsplit(":", 1)
        self.address = (host, int(port))

    def memory_mib(self) -> tuple[float, float]:
        """The server's resident memory now and at its peak (VmRSS, VmHWM)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        values = [re.search(rf"{key}:\s+(\d+) kB", status) for key in ("VmRSS", "VmHWM")]
        now, peak = (int(m.group(1)) / 1024 if m else float("nan") for m in values)
        return now, peak

    def peak_rss_mib(self) -> float:
        return self.memory_mib()[1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# kafka-run-class.sh's own JVM options (4.x, less MaxInlineLevel=15, the default since JDK 14). The test image
# starts its brokers with C1 only and the serial GC (docker/kafka/start-kafka.sh: quick start-up on shared
# cores), which would handicap the broker here; ``--broker-jvm test`` keeps those instead.
STOCK_JVM = ("-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
             "-XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true")


@contextlib.contextmanager
def broker_target(jvm: str, extra: dict[str, str] | None = None) -> Iterator[tuple[str, int | None]]:
    """A Kafka 4.4.0 broker with its default group.consumer.* settings (the same defaults as the emulator's)."""
    from tests.support.kafka_broker import BrokerPool

    settings = {"offsets.topic.num.partitions": "1", **(extra or {})}
    if jvm == "stock":
        # KAFKA_JVM_PERFORMANCE_OPTS in the container's environment (start-kafka.sh reads it and does not
        # write it out as a broker property); the heap stays the pool's 512 MiB.
        settings["jvm.performance.opts"] = STOCK_JVM
    pool = BrokerPool()
    try:
        broker = pool.get("4", settings)
        print(f"broker: Kafka {broker.version} at {broker.bootstrap} ({jvm} JVM options; started in "
              f"{broker.start_seconds:.1f} s)", flush=True)
        yield broker.bootstrap, _container_pid(broker)
    finally:
        pool.close()


def _container_pid(broker: Any) -> int | None:
    """The container's first process on this host (a local Podman engine), for its CPU time."""
    with contextlib.suppress(Exception):
        pid = int(broker.container.get_wrapped_container().attrs["State"]["Pid"])
        if Path(f"/proc/{pid}/stat").exists():
            return pid
    return None
