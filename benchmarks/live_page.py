"""Benchmark: what the live page (``GET /``, ``GET /events``) costs a busy emulator, and what a slow browser costs.

    .venv/bin/python benchmarks/live_page.py [--members 500] [--rounds 3]

``rebalance-lab serve --control-port`` runs as its own process (one core); protocol-level members
(``coordinator_scale``'s raw JoinGroup/SyncGroup) form one group of N members and rebalance it, with:

1. no browser;
2. one browser following ``/events`` (a reader counting frames and bytes);
3. the same, plus a stalled browser: it opens ``/events`` with a small receive buffer and never reads.

For each it prints the time to form the group and to rebalance it (every member rejoins), the frames and
MiB the following browser received, and the stalled one's count of bytes taken; then the time and size of
``GET /`` with the N-member group, and the server's peak memory (VmHWM). No figure is asserted: the
smoke run (tests/benchmarks) only shows the script runs.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from coordinator_scale import PARTITIONS, TOPIC, Conn, join_and_sync  # benchmarks/ is the script's path


class Server:
    def __init__(self) -> None:
        exe = Path(sys.executable).with_name("rebalance-lab")
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--port", "0", "--control-port", "0", "--topic", f"{TOPIC}:{PARTITIONS}",
             "--initial-rebalance-delay-ms", "0", "--join-race", "together", "--offsets-topic-partitions", "1"],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        lines = [self.proc.stdout.readline() for _ in range(2)]
        kafka = re.search(r"bootstrap servers: 127\.0\.0\.1:(\d+)", lines[0])
        control = re.search(r"control endpoint: (http://\S+)", lines[1])
        if kafka is None or control is None:
            raise RuntimeError(f"rebalance-lab serve did not start: {lines}")
        self.port, self.control = int(kafka.group(1)), control.group(1)

    def peak_rss_mib(self) -> float:
        match = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{self.proc.pid}/status").read_text())
        return int(match.group(1)) / 1024 if match else float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _request(server: Server, path: str) -> bytes:
    host = server.control.removeprefix("http://")
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


class Follower:
    """A browser reading ``/events`` as fast as it comes: frames (events) and bytes."""

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0
        self.task: asyncio.Task[None] | None = None

    async def start(self, server: Server) -> Follower:
        host, port = server.control.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 24)
        writer.write(_request(server, "/events"))
        await reader.readuntil(b"\r\n\r\n")
        self.task = asyncio.create_task(self._read(reader))
        self._writer = writer
        return self

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while True:
            event = await reader.readuntil(b"\n\n")
            self.bytes += len(event)
            self.frames += event.startswith(b"event: ")

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self._writer.close()


def stalled_browser(server: Server) -> socket.socket:
    """``/events`` opened with a 4 KiB receive buffer and never read: the server's writes back up at once."""
    host, port = server.control.removeprefix("http://").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(_request(server, "/events"))
    return sock


async def form_and_rebalance(server: Server, group: str, members: int) -> tuple[float, float]:
    conns = [await Conn.open("127.0.0.1", server.port) for _ in range(members)]
    started = time.perf_counter()
    joined = await asyncio.gather(*(join_and_sync(c, group) for c in conns))
    formed = time.perf_counter() - started
    started = time.perf_counter()
    await asyncio.gather(*(join_and_sync(c, group, m) for c, (m, _g) in zip(conns, joined, strict=True)))
    rebalanced = time.perf_counter() - started
    for c in conns:
        c.close()
    return formed, rebalanced


async def page_fetch(server: Server) -> tuple[float, int]:
    host, port = server.control.removeprefix("http://").rsplit(":", 1)
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(_request(server, "/"))
    body = await reader.read()
    writer.close()
    return time.perf_counter() - started, len(body)


async def main_async(args: argparse.Namespace) -> None:
    server = Server()
    try:
        for round_ in range(args.rounds):
            await one_round(server, args.members, round_)
        seconds, size = await page_fetch(server)
        print(f"GET / with {args.rounds * 3} groups of {args.members} members (still in them): "
              f"{seconds * 1000:.0f} ms, {size / 1024:.0f} KiB")
        print(f"server peak memory (VmHWM): {server.peak_rss_mib():.0f} MiB")
    finally:
        server.stop()


async def one_round(server: Server, members: int, round_: int) -> None:
    formed, rebalanced = await form_and_rebalance(server, f"quiet{round_}", members)
    print(f"round {round_ + 1}, {members} members, no browser: formed in {formed:.2f} s, rebalanced in "
          f"{rebalanced:.2f} s")
    follower = await Follower().start(server)
    formed, rebalanced = await form_and_rebalance(server, f"watched{round_}", members)
    await follower.stop()
    print(f"round {round_ + 1}, {members} members, one browser following: formed in {formed:.2f} s, rebalanced "
          f"in {rebalanced:.2f} s; it got {follower.frames} frames, {follower.bytes / 2**20:.1f} MiB")
    follower = await Follower().start(server)
    stalled = stalled_browser(server)
    formed, rebalanced = await form_and_rebalance(server, f"stalled{round_}", members)
    await follower.stop()
    stalled.setblocking(False)
    taken = 0
    try:
        while chunk := stalled.recv(1 << 20):
            taken += len(chunk)
    except BlockingIOError:
        pass
    stalled.close()
    print(f"round {round_ + 1}, {members} members, one following and one stalled browser: formed in "
          f"{formed:.2f} s, rebalanced in {rebalanced:.2f} s; the follower got {follower.frames} frames, "
          f"the stalled one had {taken / 1024:.0f} KiB waiting in its socket")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
