"""Benchmark: a canary group's heartbeat latency while one client misbehaves (issue 17), and the server's RSS.

    .venv/bin/python benchmarks/misbehaviour.py [--topics 250000] [--pipelined 1500] [--clients 10]
        [--window-seconds 4] [--session-ms 2000] [--only NAME,...]

Each scenario starts a fresh ``rebalance-lab serve`` process (so its peak RSS is the scenario's own),
starts a canary group (tests/support/canary.py: two classic members with a 2 s session and a KIP-848
member, heartbeating every 100 ms, in their own thread), then runs one misbehaviour and keeps the
canary heartbeating for ``--window-seconds`` more:

* ``none``: nothing else happens (the baseline);
* ``metadata-huge``: one Metadata request naming ``--topics`` topics (250,000 names: 10 MB), answered;
* ``pipeline-1``: one client writes ``--pipelined`` all-topics Metadata requests (40 topics of 3
  partitions exist) and reads none of the answers until the window is over;
* ``pipeline-N``: ``--clients`` clients each write ``--pipelined`` ApiVersions requests, same way;
* ``trickle``: a client sends an ApiVersions request one byte every 10 ms;
* ``idle``: 200 connections open, send one request and go silent (``--connections-max-idle-ms 500``),
  so the server closes them all during the window.

Prints per scenario the canary's heartbeat p50/p99/max in ms, rebalances and lost members (both must
be 0), and the server's RSS at the end and its peak (VmRSS / VmHWM from /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))

from kip848_targets import EmulatorProcess  # noqa: E402

from rebalance_lab.protocol import codec  # noqa: E402
from tests.support.canary import Canary, CanaryReport  # noqa: E402
from tests.support.misbehaviour import (  # noqa: E402
    metadata_request_naming,
    pipelined_requests,
    read_correlation_ids,
)

METADATA, API_VERSIONS = 3, 18


# A misbehaviour gets the bytes its client sends, built before the canary starts, and runs in a child
# process: this process's own work must not hold the GIL while the canary's thread measures.
Address = tuple[str, int]
Misbehaviour = Callable[[Address, argparse.Namespace, bytes], Awaitable[None]]
Prepare = Callable[[argparse.Namespace], bytes]


async def _nothing(server: Address, args: argparse.Namespace, data: bytes) -> None:
    await asyncio.sleep(0)


def _huge_request(args: argparse.Namespace) -> bytes:
    return metadata_request_naming([f"no-such-topic-{i:012d}" for i in range(args.topics)])


async def _metadata_huge(server: Address, args: argparse.Namespace, data: bytes) -> None:
    reader, writer = await asyncio.open_connection(*server)
    writer.write(data)
    await writer.drain()
    ids = await read_correlation_ids(reader, 1, timeout=600)
    assert ids == [1], ids
    writer.close()


async def _pipeline(server: Address, clients: int, data: bytes, count: int, window_s: float) -> None:
    conns = [await asyncio.open_connection(*server) for _ in range(clients)]
    for _, writer in conns:
        writer.write(data)  # never drained, answers unread for the window
    await asyncio.sleep(window_s)
    answered = await asyncio.gather(*(read_correlation_ids(reader, count, timeout=600) for reader, _ in conns))
    assert all(ids == list(range(1, count + 1)) for ids in answered)
    for _, writer in conns:
        writer.close()


async def _pipeline_one(server: Address, args: argparse.Namespace, data: bytes) -> None:
    await _pipeline(server, 1, data, args.pipelined, args.window_seconds)


async def _pipeline_many(server: Address, args: argparse.Namespace, data: bytes) -> None:
    await _pipeline(server, args.clients, data, args.pipelined, args.window_seconds)


def _api_versions(args: argparse.Namespace) -> bytes:
    return codec.encode_request(codec.new_request(API_VERSIONS, 3, client_software_name="slow",
                                                  client_software_version="1"), 1, "trickle")


async def _trickle(server: Address, args: argparse.Namespace, request: bytes) -> None:
    reader, writer = await asyncio.open_connection(*server)
    for byte in request:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.01)
    assert await read_correlation_ids(reader, 1) == [1]
    writer.close()


async def _idle(server: Address, args: argparse.Namespace, request: bytes) -> None:
    conns = []
    for _ in range(200):  # each one active once, then silent
        reader, writer = await asyncio.open_connection(*server)
        writer.write(request)
        assert await read_correlation_ids(reader, 1) == [1]
        conns.append((reader, writer))
    closed = await asyncio.gather(*(asyncio.wait_for(reader.read(1), 30) for reader, _ in conns))
    assert closed == [b""] * len(conns), "every idle connection is closed by the server"


SCENARIOS: dict[str, tuple[Prepare, Misbehaviour, tuple[str, ...]]] = {
    "none": (lambda args: b"", _nothing, ()),
    "metadata-huge": (_huge_request, _metadata_huge, ()),
    "pipeline-1": (lambda args: pipelined_requests(METADATA, args.pipelined), _pipeline_one, ()),
    "pipeline-N": (lambda args: pipelined_requests(API_VERSIONS, args.pipelined), _pipeline_many, ()),
    "trickle": (_api_versions, _trickle, ()),
    "idle": (_api_versions, _idle, ("--connections-max-idle-ms", "500")),
}


def _misbehave(name: str, address: Address, args: argparse.Namespace, data: bytes) -> None:
    asyncio.run(SCENARIOS[name][1](address, args, data))


def run(name: str, args: argparse.Namespace) -> tuple[CanaryReport, float, float, float]:
    prepare, _, extra = SCENARIOS[name]
    data = prepare(args)
    topics = [arg for i in range(40) for arg in ("--topic", f"topic-{i}:3")]
    server = EmulatorProcess("--min-session-timeout-ms", "1000", *topics, *extra)  # 40 topics, 1 s sessions
    try:
        canary = Canary(server.bootstrap, session_timeout_ms=args.session_ms, heartbeat_interval_ms=100)
        canary.start()
        canary.wait_stable_blocking()
        started = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=_misbehave, args=(name, server.address, args, data))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise RuntimeError(f"the {name} client failed (exit code {child.exitcode})")
        took = time.perf_counter() - started
        time.sleep(args.window_seconds)
        report = canary.stop_blocking()
        now, peak = server.memory_mib()
        return report, took, now, peak
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=250_000, help="topics named by the huge Metadata request")
    parser.add_argument("--pipelined", type=int, default=1_500, help="requests each pipelining client writes")
    parser.add_argument("--clients", type=int, default=10, help="clients of the pipeline-N scenario")
    parser.add_argument("--window-seconds", type=float, default=4.0, help="canary time after each misbehaviour")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="scenarios to run, comma-separated")
    parser.add_argument("--session-ms", type=int, default=2_000, help="the canary's classic session timeout")
    args = parser.parse_args()
    healthy = True
    for name in args.only.split(","):
        report, took, now, peak = run(name, args)
        healthy &= not (report.members_lost or report.rebalances or report.errors)
        print(f"{name:14s} misbehaviour {took:6.2f} s | canary heartbeats {len(report.latencies_ms):5d} "
              f"p50 {report.percentile(50):7.1f} ms p99 {report.percentile(99):7.1f} ms "
              f"max {max(report.latencies_ms, default=float('nan')):7.1f} ms | rebalances {report.rebalances} "
              f"lost {len(report.members_lost)} errors {len(report.errors)} | server RSS {now:6.1f} MiB "
              f"(peak {peak:6.1f} MiB)", flush=True)
    if not healthy:
        sys.exit("the canary was hurt in at least one scenario (see above)")


if __name__ == "__main__":
    main()
