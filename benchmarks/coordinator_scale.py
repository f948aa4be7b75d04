"""Benchmark: the group coordinator at scale, driven by protocol-level members (raw requests).

    .venv/bin/python benchmarks/coordinator_scale.py [--sizes 1000,2000,5000,10000] [--targets emulator,kafka,kfake]
        [--big-heartbeat-seconds 5] [--groups 10000] [--heartbeat-seconds 5] [--rounds 1] [--compare DIR]

Side by side in one run (issue 22; coordinator_scale_rebalance.py): on each target — the emulator
(``rebalance-lab serve``, its own process, one core), a real Kafka 4.4.0 broker (the test suite's image,
tests/support/kafka_broker.py) and kfake (franz-go's fake Kafka, tests/go/kfakebench -serve) — one group
of N raw members per size, one connection each: the time of a **full rebalance** (the leader rejoins, every
member rejoins and syncs, until all hold their assignment) and the server's CPU for it; heartbeats per
second of the largest group; then the growth exponents (log(t2/t1) / log(N2/N1), goal <= 1.1 for the
emulator) and the ratios peer time / emulator time (goal > 1 at every size). All targets use Kafka's
default initial delay of 3 s for the (untimed) formation.

``--compare DIR`` (repeatable) adds ``emulator@DIR``: the emulator of another checkout (``git worktree add /tmp/before
REV``); ``--rounds R`` runs every target R times, the targets taking turns (round 1 on each, then round 2 on each:
before/after alternately on a machine whose load changes), a fresh server each time, and reports the medians.

Then, on the emulator only:

* G groups of 3 members stabilising (batches in flight at once), groups per second;
* sustained heartbeats per second answered by the one-core server;
* the server process's peak memory (VmHWM).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, for the broker

from coordinator_scale_rebalance import RebalanceRun, kfake_target, one_size, report
from kip848_targets import EmulatorProcess, broker_target

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


@contextlib.contextmanager
def _target(name: str) -> Iterator[tuple[str, int | None, Callable[[], str]]]:
    """(bootstrap, the server's pid for its CPU time, a note printed after the sizes)."""
    if name.startswith("emulator"):
        source = name.partition("@")[2] or None  # emulator@DIR: another checkout's (--compare)
        emulator = EmulatorProcess("--initial-rebalance-delay-ms", "3000", source=source)  # Kafka's default
        try:
            yield (emulator.bootstrap, emulator.proc.pid,
                   lambda: f"peak memory (VmHWM) {emulator.peak_rss_mib():.0f} MiB")
        finally:
            emulator.stop()
    elif name == "kafka":
        # A 10,000-member group's metadata record (~1.3 MB here) is over the default message.max.bytes (1 MiB):
        # 4.4.0 then fails the leader's SyncGroup with UNKNOWN_SERVER_ERROR; 10 MiB lets it store the group.
        with broker_target("stock", {"message.max.bytes": "10485760"}) as (bootstrap, pid):
            yield bootstrap, pid, lambda: ""
    elif name == "kfake":
        from peer_kfake import _binary

        with kfake_target(str(_binary())) as (bootstrap, pid):
            yield bootstrap, pid, lambda: ""
    else:
        raise SystemExit(f"unknown target {name!r} (emulator, kafka, kfake)")


def side_by_side(sizes: list[int], targets: list[str], heartbeat_s: float, rounds: int = 1) -> None:
    print(f"== one group of N members, a full rebalance, on {', '.join(targets)} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores) ==", flush=True)
    every: dict[tuple[str, int], list[RebalanceRun]] = {}
    for index in range(1, rounds + 1):
        for target in targets:
            if rounds > 1:
                print(f"-- round {index}: {target} (load average {os.getloadavg()[0]:.1f})", flush=True)
            for n, run in _sizes_on(target, sizes, heartbeat_s):
                every.setdefault((target, n), []).append(run)
    runs = {key: _median(found) for key, found in every.items()}
    if rounds > 1:
        print(f"== medians of {rounds} rounds ==")
    print("\n".join(report(runs, targets, sizes)))


def _sizes_on(target: str, sizes: list[int], heartbeat_s: float) -> Iterator[tuple[int, RebalanceRun]]:
    """Every size on one fresh server of ``target``, each reported as it is done."""
    with _target(target) as (bootstrap, pid, note):
        # an unreported small group first: the JVM's JIT compiles the paths, every target has served once
        asyncio.run(one_size(target, bootstrap, max(2, sizes[0] // 10), None, 0))
        for n in sizes:
            try:
                run = asyncio.run(one_size(target, bootstrap, n, pid, heartbeat_s if n == sizes[-1] else 0))
            except (RuntimeError, OSError) as exc:  # reported; the other sizes and targets still run
                print(f"{target:8} N={n:6}: failed: {exc}", flush=True)
                continue
            print(report({(target, n): run}, [target], [n])[0], flush=True)
            yield n, run
        if note():
            print(f"{target}: {note()}")


def _median(runs: list[RebalanceRun]) -> RebalanceRun:
    """One run of the medians (wall time, server CPU, heartbeats) of a target's rounds at one size."""
    if len(runs) == 1:
        return runs[0]

    def middle(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    seconds = middle([r.seconds for r in runs])
    assert seconds is not None
    return RebalanceRun(runs[0].target, runs[0].members, seconds, middle([r.cpu_s for r in runs]),
                        middle([r.heartbeats_per_s for r in runs]), middle([r.heartbeat_cpu_us for r in runs]),
                        middle([r.driver_cpu_us for r in runs]), middle([r.round_driver_cpu_s for r in runs]),
                        middle([r.leader_answer_s for r in runs]), middle([r.last_join_answer_s for r in runs]))


async def small_groups(args: argparse.Namespace) -> None:
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
    parser.add_argument("--sizes", default="1000,2000,5000,10000", help="sizes of the one big group, comma-separated")
    parser.add_argument("--targets", default="emulator,kafka,kfake", help="emulator, kafka (a 4.4.0 broker), kfake")
    parser.add_argument("--big-heartbeat-seconds", type=float, default=5.0,
                        help="heartbeats of the largest group, seconds (0: none)")
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=500)
    parser.add_argument("--heartbeat-seconds", type=float, default=5.0)
    parser.add_argument("--groups-initial-delay-ms", type=int, default=100, help="for the many small groups")
    parser.add_argument("--rounds", type=int, default=1, help="every target this many times, alternating; medians")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also the emulator of another checkout, alternating with this one (repeatable)")
    args = parser.parse_args()
    names = [name for name in args.targets.split(",") if name]
    at = names.index("emulator") + 1 if "emulator" in names else 0
    names[at:at] = [f"emulator@{source}" for source in args.compare]
    side_by_side([int(n) for n in args.sizes.split(",")], names, args.big_heartbeat_seconds, args.rounds)
    if args.groups:
        asyncio.run(small_groups(args))


if __name__ == "__main__":
    main()
