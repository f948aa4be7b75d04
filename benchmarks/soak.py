"""Soak: does the emulator's memory stay flat under endless rebalancing? (issue 17, "Bounded memory")

    .venv/bin/python benchmarks/soak.py [--generations 100000] [--groups 4] [--consumer-groups 2]

Runs ``rebalance-lab serve`` as its own process with everything that used to grow per generation turned
on: the testing toolkit (``--control-port``: fault controller and generation history) and a recording
(``--record``, to a temporary file). Raw-protocol members then churn as fast as the server answers:

* classic groups: one member joins (KIP-394 two-step JoinGroup), syncs its assignment and leaves, so
  every cycle is a new generation;
* KIP-848 consumer groups: one member joins with ConsumerGroupHeartbeat (a group epoch) and leaves
  (another), with the assignment interval at 0 so each join computes a target;
* every ``--reconnect-every`` cycles a member opens a new connection, as a restarted consumer would.

The count of generations is the server's own (``GET /history``: entries kept + dropped). Every
``--report-every`` generations it prints the server's RSS; at the end the growth after the warm-up
(when the history caps are full) and the slope (KiB per 1,000 generations, least squares, over all the
samples after the warm-up and over their last half). It exits 1 when the growth passes
``--max-growth-mib``: memory that keeps growing. Some growth after the warm-up is expected and bounded:
every cycle makes a new member id, and the assignors' caches of Java hash orders keep up to 65,536 of
them (``clients/assignors/java_hashmap.py``), so RSS flattens only once they are full.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription

JOIN, SYNC, LEAVE, CONSUMER_HEARTBEAT = 11, 14, 13, 68
MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID = 79, 25
TOPIC, PARTITIONS = "soak", 6
_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
_ASSIGNMENT = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
_LEAVING = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")
METADATA = encode_subscription(Subscription(topics=(TOPIC,)))
ASSIGNMENT = encode_assignment(Assignment(tuple(TopicPartition(TOPIC, p) for p in range(PARTITIONS))))


class Conn:
    """One connection, one request in flight at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation = reader, writer, 0

    @classmethod
    async def open(cls, port: int) -> Conn:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def call(self, api_key: int, version: int, **fields: Any) -> Any:
        self.correlation += 1
        self.writer.write(codec.encode_request(codec.new_request(api_key, version, **fields), self.correlation,
                                               "soak"))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return codec.decode_response(api_key, version, await self.reader.readexactly(size))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def _checked(response: Any, what: str) -> Any:
    if response.error_code != 0:
        raise RuntimeError(f"{what} failed with error {response.error_code}")
    return response


async def join(conn: Conn, group: str) -> Any:
    """KIP-394's two-step join. The offsets sweep (every 10 minutes) deletes an Empty group without offsets even
    while a member id is pending, so the second step can get UNKNOWN_MEMBER_ID: start over, as a client does."""
    fields = dict(group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, group_instance_id=None,
                  protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=METADATA)])
    for _attempt in range(3):
        joined = await conn.call(JOIN, 5, member_id="", **fields)
        if joined.error_code == MEMBER_ID_REQUIRED:
            joined = await conn.call(JOIN, 5, member_id=joined.member_id, **fields)
        if joined.error_code != UNKNOWN_MEMBER_ID:
            break
    return _checked(joined, "JoinGroup")


async def classic_cycle(conn: Conn, group: str) -> None:
    """Join (two steps), sync the leader's assignment, leave: one generation."""
    joined = await join(conn, group)
    _checked(await conn.call(SYNC, 3, group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
                             group_instance_id=None,
                             assignments=[_ASSIGNMENT(member_id=joined.member_id, assignment=ASSIGNMENT)]),
             "SyncGroup")
    _checked(await conn.call(LEAVE, 3, group_id=group,
                             members=[_LEAVING(member_id=joined.member_id, group_instance_id=None)]), "LeaveGroup")


async def consumer_cycle(conn: Conn, group: str) -> None:
    """A KIP-848 member joins (epoch bump, target computed) and leaves (another bump)."""
    member = str(uuid.uuid4())
    _checked(await conn.call(CONSUMER_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=0,
                             instance_id=None, rack_id=None, rebalance_timeout_ms=30_000,
                             subscribed_topic_names=[TOPIC], subscribed_topic_regex=None, server_assignor=None,
                             topic_partitions=[]), "ConsumerGroupHeartbeat (join)")
    _checked(await conn.call(CONSUMER_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=-1,
                             instance_id=None, rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None,
                             subscribed_topic_regex=None, server_assignor=None, topic_partitions=None),
             "ConsumerGroupHeartbeat (leave)")


class Server:
    def __init__(self, record: str, extra: list[str]) -> None:
        exe = Path(sys.executable).with_name("rebalance-lab")
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--port", "0", "--topic", f"{TOPIC}:{PARTITIONS}", "--initial-rebalance-delay-ms",
             "0", "--offsets-topic-partitions", "1", "--control-port", "0", "--record", record,
             "--consumer-assignment-interval-ms", "0", *extra],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        first, second = self.proc.stdout.readline(), self.proc.stdout.readline()
        port = re.search(r"bootstrap servers: 127\.0\.0\.1:(\d+)", first)
        control = re.search(r"control endpoint: (\S+)", second)
        if port is None or control is None:
            raise RuntimeError(f"rebalance-lab serve did not start: {first!r} {second!r}")
        self.port, self.control = int(port.group(1)), control.group(1)

    def rss_kib(self) -> int:
        match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{self.proc.pid}/status").read_text())
        assert match is not None
        return int(match.group(1))

    def history(self) -> dict[str, Any]:
        request = urllib.request.Request(self.control + "/history")
        with urllib.request.urlopen(request, timeout=30) as answer:
            return dict(json.load(answer))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def slope_kib_per_1000(samples: list[tuple[int, int]]) -> float:
    """Least-squares slope of RSS (KiB) against generations, per 1,000 generations."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    var = sum((x - mean_x) ** 2 for x, _ in samples)
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in samples) / var if var else 0.0


async def churn(server: Server, args: argparse.Namespace) -> list[tuple[int, int]]:
    """Run the cycles until the server has counted ``--generations``; (generations, RSS KiB) samples."""
    done = asyncio.Event()

    async def member(name: str, cycle: Any) -> None:
        conn = await Conn.open(server.port)
        cycles = 0
        while not done.is_set():
            await cycle(conn, name)
            cycles += 1
            if cycles % args.reconnect_every == 0:
                await conn.close()
                conn = await Conn.open(server.port)
        await conn.close()

    tasks = [asyncio.create_task(member(f"soak-classic-{i}", classic_cycle)) for i in range(args.groups)]
    tasks += [asyncio.create_task(member(f"soak-consumer-{i}", consumer_cycle)) for i in range(args.consumer_groups)]
    samples: list[tuple[int, int]] = []
    started, next_report = time.perf_counter(), args.report_every
    try:
        while True:
            await asyncio.sleep(0.2)
            for task in tasks:
                if task.done():
                    task.result()  # a member's failure ends the run with its error
            summary = await asyncio.to_thread(server.history)
            generations = summary["retained"] + summary["dropped_total"]
            if generations >= next_report or generations >= args.generations:
                samples.append((generations, server.rss_kib()))
                elapsed = time.perf_counter() - started
                print(f"generations {generations:>9,}  RSS {samples[-1][1] / 1024:7.1f} MiB  history kept "
                      f"{summary['retained']:>6,} dropped {summary['dropped_total']:>9,}  {elapsed:6.1f} s "
                      f"({generations / elapsed:,.0f} generations/s)", flush=True)
                next_report = (generations // args.report_every + 1) * args.report_every
            if generations >= args.generations:
                return samples
    finally:
        done.set()
        await asyncio.gather(*tasks, return_exceptions=True)


def verdict(samples: list[tuple[int, int]], args: argparse.Namespace, record: Path) -> int:
    warm = [s for s in samples if s[0] >= args.warmup] or samples[-2:]
    late = warm[len(warm) // 2:]
    growth = (warm[-1][1] - warm[0][1]) / 1024
    print(f"after the warm-up ({warm[0][0]:,} generations): RSS {warm[0][1] / 1024:.1f} -> {warm[-1][1] / 1024:.1f} "
          f"MiB, growth {growth:+.1f} MiB (bound {args.max_growth_mib} MiB); slope {slope_kib_per_1000(warm):+.2f} "
          f"KiB per 1,000 generations, {slope_kib_per_1000(late):+.2f} over the last half "
          f"(from {late[0][0]:,}); the old unbounded history grew ~5,300 KiB per 1,000")
    print(f"recording: {record.stat().st_size / 2**20:,.1f} MiB on disk")
    if growth > args.max_growth_mib:
        print("FAIL: the server's memory keeps growing with generations", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generations", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=4, help="classic groups churning at once")
    parser.add_argument("--consumer-groups", type=int, default=2, help="KIP-848 consumer groups churning at once")
    parser.add_argument("--reconnect-every", type=int, default=20, help="cycles per connection")
    parser.add_argument("--report-every", type=int, default=5_000, help="generations between RSS samples")
    parser.add_argument("--warmup", type=int, default=20_000,
                        help="generations before the slope counts (past the default history caps)")
    parser.add_argument("--max-growth-mib", type=float, default=16.0,
                        help="RSS growth allowed after the warm-up: bounded caches that fill with new member ids "
                             "(the assignors' Java hash caches keep up to 65,536) (default: %(default)s)")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra `serve` argument (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbl-soak-") as tmp:
        record = Path(tmp) / "soak.jsonl"
        server = Server(str(record), args.serve_arg)
        try:
            print(f"soak: {args.generations:,} generations, {args.groups} classic + {args.consumer_groups} KIP-848 "
                  f"groups, toolkit and recording on; start RSS {server.rss_kib() / 1024:.1f} MiB", flush=True)
            samples = asyncio.run(churn(server, args))
        finally:
            server.stop()
        return verdict(samples, args, record)


if __name__ == "__main__":
    sys.exit(main())
