"""Benchmark: how often three members rejoining together share generation 1 with a zero initial delay.

    .venv/bin/python benchmarks/join_race.py [--runs N] [--spacings 0,0.5,1,2,5] [--join-race MODE] [--broker 4,3]

Runs tests/race/scenario.py (three members get their ids, then rejoin in one burst or spaced by a busy
wait) against the emulator in a child process (``serve --join-race MODE --seed 18``) and, with
``--broker``, against real Kafka brokers of those flavors (Testcontainers; group.initial.rebalance.delay.ms=0),
and prints per spacing the runs whose generation 1 held all three members, the distribution of
generation 1's size and the machine's load. It is how coordinator/join_race.py's latency model was fitted:
re-run it on another machine to see whether the broker's and the emulator's shares still agree.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.race.emulator_process import serve
from tests.race.scenario import measure, wait_for_coordinator


def _table(label: str, host: str, port: int, runs: int, spacings: list[float]) -> None:
    asyncio.run(wait_for_coordinator(host, port, "join-race-warm-up"))
    for spacing in spacings:
        started = time.monotonic()
        shares = asyncio.run(measure(host, port, f"join-race-{os.getpid()}", spacing, runs))
        print(f"{label}: {shares.summary()} [{time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f}]",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--spacings", default="0,0.5,1,2,5", help="ms between two rejoins, comma-separated")
    parser.add_argument("--join-race", default="sampled", choices=["sampled", "separate", "together"])
    parser.add_argument("--broker", default="", help="real broker flavors to measure too, e.g. 4,3")
    args = parser.parse_args()
    spacings = [float(s) for s in args.spacings.split(",")]
    with serve("--join-race", args.join_race, "--seed", "18") as (host, port):
        _table(f"emulator ({args.join_race})", host, port, args.runs, spacings)
    if args.broker:
        from tests.support.kafka_broker import BrokerPool

        pool = BrokerPool()
        try:
            for flavor in args.broker.split(","):
                broker = pool.get(flavor)
                host, port_text = broker.bootstrap_servers[0].rsplit(":", 1)
                _table(f"Kafka {flavor}", host, int(port_text), args.runs, spacings)
        finally:
            pool.close()


if __name__ == "__main__":
    main()
