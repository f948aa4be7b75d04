"""Benchmark: the group coordinator at scale, driven by protocol-level members (raw requests).

    .venv/bin/python benchmarks/coordinator_scale.py [--members 1000] [--groups 10000] [--heartbeat-seconds 5]

The emulator runs as its own process (``rebalance-lab serve``, one core); the members
run here on asyncio, one TCP connection per member while it has a request parked, as
real clients do. Prints:

* one group of N members: the time for all N to join (KIP-394 two-step), the leader to
  assign with our range assignor, and every member to get its assignment; then a
  rebalance of the established group (every member rejoins) timed the same way;
* G groups of 3 members stabilising (batches in flight at once), groups per second;
* sustained heartbeats per second answered by the one-core server;
* the server process's peak memory (VmHWM).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rebalance_lab.clients.assignors import get_assignor
from rebalance_lab.clients.assignors.types import ClusterView, GroupSubscription, Subscription
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.consumer_protocol import decode_subscription, encode_assignment, encode_subscription

JOIN, HEARTBEAT, SYNC = 11, 12, 14
JOIN_V, SYNC_V, HEARTBEAT_V = 5, 3, 3
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
TOPIC, PARTITIONS = "scale", 2000  # the big group's topic
SMALL_TOPIC, SMALL_PARTITIONS = "small", 6  # each small group's topic
METADATA = {t: encode_subscription(Subscription(topics=(t,))) for t in (TOPIC, SMALL_TOPIC)}
COUNTS = {TOPIC: PARTITIONS, SMALL_TOPIC: SMALL_PARTITIONS}


class Conn:
    """One connection, one request in flight at a time (responses come back in order)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation = reader, writer, 0

    @classmethod
    async def open(cls, host: str, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def call(self, api_key: int, version: int, **fields: Any) -> Any:
        self.correlation += 1
        self.writer.write(codec.encode_request(codec.new_request(api_key, version, **fields), self.correlation, "m"))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return codec.decode_response(api_key, version, await self.reader.readexactly(size))

    def close(self) -> None:
        self.writer.close()


_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
_ASSIGNMENT = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")


async def join(conn: Conn, group: str, member_id: str = "", topic: str = TOPIC) -> Any:
    fields = dict(group_id=group, session_timeout_ms=60_000, rebalance_timeout_ms=60_000, group_instance_id=None,
                  protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=METADATA[topic])])
    response = await conn.call(JOIN, JOIN_V, member_id=member_id, **fields)
    if response.error_code == MEMBER_ID_REQUIRED:
        response = await conn.call(JOIN, JOIN_V, member_id=response.member_id, **fields)
    if response.error_code != 0:
        raise RuntimeError(f"JoinGroup failed with {response.error_code}")
    return response


def assign(response: Any) -> list[Any]:
    members = {m.member_id: decode_subscription(m.metadata) for m in response.members}
    result = get_assignor("range").assign(ClusterView.of_counts(COUNTS), GroupSubscription(members))
    return [_ASSIGNMENT(member_id=m, assignment=encode_assignment(a)) for m, a in result.items()]


async def join_and_sync(conn: Conn, group: str, member_id: str = "", topic: str = TOPIC) -> tuple[str, int]:
    """Join and sync; rejoin as a real member would when a late member started another rebalance."""
    for _attempt in range(20):
        response = await join(conn, group, member_id, topic)
        member_id = response.member_id
        assignments = assign(response) if response.leader == response.member_id else []
        synced = await conn.call(SYNC, SYNC_V, group_id=group, generation_id=response.generation_id,
                                 member_id=member_id, group_instance_id=None, assignments=assignments)
        if synced.error_code == 0:
            return member_id, response.generation_id
        if synced.error_code != REBALANCE_IN_PROGRESS:
            raise RuntimeError(f"SyncGroup failed with {synced.error_code}")
    raise RuntimeError(f"group {group} did not settle in 20 rounds")


class Server:
    def __init__(self, delay_ms: int) -> None:
        exe = Path(sys.executable).with_name("rebalance-lab")
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--port", "0", "--topic", f"{TOPIC}:{PARTITIONS}",
             "--topic", f"{SMALL_TOPIC}:{SMALL_PARTITIONS}",
             "--initial-rebalance-delay-ms", str(delay_ms), "--offsets-topic-partitions", "1"],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        match = re.search(r"bootstrap servers: 127\.0\.0\.1:(\d+)", self.proc.stdout.readline())
        if match is None:
            raise RuntimeError("rebalance-lab serve did not start")
        self.port = int(match.group(1))

    def peak_rss_mib(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(match.group(1)) / 1024 if match else float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def one_big_group(port: int, members: int) -> tuple[float, float]:
    conns = [await Conn.open("127.0.0.1", port) for _ in range(members)]
    started = time.perf_counter()
    joined = await asyncio.gather(*(join_and_sync(c, "big") for c in conns))
    formed = time.perf_counter() - started
    started = time.perf_counter()
    rejoins = (join_and_sync(c, "big", member_id) for c, (member_id, _gen) in zip(conns, joined, strict=True))
    await asyncio.gather(*rejoins)
    rebalanced = time.perf_counter() - started
    for c in conns:
        c.close()
    return formed, rebalanced


async def many_groups(port: int, groups: int, in_flight: int) -> tuple[float, list[tuple[Conn, str, str, int]]]:
    pool = [[await Conn.open("127.0.0.1", port) for _ in range(3)] for _ in range(in_flight)]
    members: list[tuple[Conn, str, str, int]] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for g in range(groups):
        queue.put_nowait(g)

    async def worker(conns: list[Conn]) -> None:
        while not queue.empty():
            group = f"g{queue.get_nowait()}"
            results = await asyncio.gather(*(join_and_sync(c, group, topic=SMALL_TOPIC) for c in conns))
            members.extend((c, group, m, gen) for c, (m, gen) in zip(conns, results, strict=True))

    started = time.perf_counter()
    await asyncio.gather(*(worker(conns) for conns in pool))
    return time.perf_counter() - started, members


async def heartbeats(members: list[tuple[Conn, str, str, int]], seconds: float) -> float:
    """Each connection pipelines heartbeats for its latest member; count answers per second."""
    latest = {id(c): (c, g, m, gen) for c, g, m, gen in members}
    deadline = time.perf_counter() + seconds
    counts = [0]

    async def beat(conn: Conn, group: str, member: str, generation: int) -> None:
        while time.perf_counter() < deadline:
            response = await conn.call(HEARTBEAT, HEARTBEAT_V, group_id=group, generation_id=generation,
                                       member_id=member, group_instance_id=None)
            if response.error_code != 0:
                raise RuntimeError(f"Heartbeat failed with {response.error_code}")
            counts[0] += 1

    started = time.perf_counter()
    await asyncio.gather(*(beat(*entry) for entry in latest.values()))
    return counts[0] / (time.perf_counter() - started)


async def main_async(args: argparse.Namespace) -> None:
    server = Server(delay_ms=args.initial_delay_ms)
    try:
        formed, rebalanced = await one_big_group(server.port, args.members)
        print(f"one group of {args.members} members: formed (join, assign, sync) in {formed:.2f} s "
              f"(including the {args.initial_delay_ms} ms initial delay); a full rebalance of the formed "
              f"group (every member rejoins) in {rebalanced:.2f} s")
        print(f"server peak memory (VmHWM) with the {args.members}-member group: {server.peak_rss_mib():.0f} MiB")
    finally:
        server.stop()
    # Many small groups on a fresh server whose initial delay is short: each group's three members
    # join at once, so one delay window gathers them (Kafka's default of 3000 ms would only add waiting).
    server = Server(delay_ms=args.groups_initial_delay_ms)
    try:
        elapsed, members = await many_groups(server.port, args.groups, args.in_flight)
        print(f"{args.groups} groups of 3 members stabilised in {elapsed:.2f} s "
              f"({args.groups / elapsed:,.0f} groups/s; {args.in_flight} groups in flight; initial delay "
              f"{args.groups_initial_delay_ms} ms)")
        rate = await heartbeats(members, args.heartbeat_seconds)
        print(f"sustained heartbeats answered by the one-core server: {rate:,.0f} per second "
              f"({args.in_flight * 3} connections)")
        print(f"server peak memory (VmHWM) with {args.groups} groups and {args.groups * 3} members: "
              f"{server.peak_rss_mib():.0f} MiB")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=500)
    parser.add_argument("--heartbeat-seconds", type=float, default=5.0)
    parser.add_argument("--initial-delay-ms", type=int, default=3000, help="for the big group (Kafka's default)")
    parser.add_argument("--groups-initial-delay-ms", type=int, default=100, help="for the many small groups")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
