"""Benchmark: what ``--data-dir`` costs producers, and how long a restart on a full directory takes.

    .venv/bin/python benchmarks/durability.py [--records N] [--value-size B] [--sequential N] [--runs N]

For each mode (memory only; ``--data-dir`` with Kafka's default flush policy, i.e. written to the OS
page cache at once and never fsynced by count or time; ``--data-dir --flush-messages 1``, an fsync per
produced batch) it prints:

* confluent-kafka producing N records (acks=all, linger.ms=5) to a 3-partition topic: records/s, MB/s;
* ``--sequential`` single records each waited for (acks=all, one batch per request): median and p99
  latency, where an fsync per message shows in full;
* for the data-directory modes, the time to start again on the directory just written (recovery).

Medians over ``--runs``; the machine's disk and load decide the absolute figures, so compare modes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer

from rebalance_lab.api import Emulator

TOPIC = "bench"
MODES: dict[str, dict[str, Any]] = {
    "memory only": {},
    "--data-dir": {"data_dir": True},
    "--data-dir --flush-messages 1": {"data_dir": True, "flush_messages": 1},
}


def _producer(bootstrap: str, **settings: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **settings})


def _warm_up(producer: Producer) -> None:
    """One acknowledged record first: connections and metadata are not what is measured."""
    producer.produce(TOPIC, value=b"warm-up")
    if producer.flush(30) != 0:
        raise RuntimeError("the warm-up record was not acknowledged")


def bulk_seconds(bootstrap: str, records: int, value: bytes) -> float:
    producer = _producer(bootstrap)
    failed: list[str] = []

    def check(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    _warm_up(producer)
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, key=str(i).encode(), value=value, on_delivery=check)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0 or failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[:3]}")
    return time.perf_counter() - started


def sequential_latencies_ms(bootstrap: str, count: int, value: bytes) -> list[float]:
    producer = _producer(bootstrap, **{"linger.ms": 0})
    _warm_up(producer)
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        producer.produce(TOPIC, key=str(i).encode(), value=value)
        if producer.flush(30) != 0:
            raise RuntimeError("a sequential record was not acknowledged")
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _timed_start(options: dict[str, Any]) -> float:
    started = time.perf_counter()
    with Emulator(**options):
        return time.perf_counter() - started


def run_mode(mode: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    value = b"v" * args.value_size
    with tempfile.TemporaryDirectory(prefix="rbl-durability-") as directory:
        options: dict[str, Any] = {"topics": [(TOPIC, 3)]}
        if mode.get("data_dir"):
            options["data_dir"] = directory
        if "flush_messages" in mode:
            options["flush_messages"] = mode["flush_messages"]
        with Emulator(**options) as emu:
            bulk = bulk_seconds(emu.bootstrap_servers, args.records, value)
            latencies = sorted(sequential_latencies_ms(emu.bootstrap_servers, args.sequential, value))
        restart = _timed_start(options) if mode.get("data_dir") else float("nan")
    return {"bulk_s": bulk, "p50_ms": statistics.median(latencies),
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], "restart_s": restart}


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main(out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--sequential", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    mb = args.records * args.value_size / 1e6
    for name, mode in MODES.items():
        runs = [run_mode(mode, args) for _ in range(args.runs)]
        bulk = _median(runs, "bulk_s")
        line = (f"{name:<31} produce {args.records} x {args.value_size} B: {args.records / bulk:>9,.0f} rec/s "
                f"{mb / bulk:6.1f} MB/s | sequential acks=all p50 {_median(runs, 'p50_ms'):6.2f} ms "
                f"p99 {_median(runs, 'p99_ms'):6.2f} ms")
        if mode.get("data_dir"):
            line += f" | restart on the directory {_median(runs, 'restart_s') * 1000:.0f} ms"
        out(line)


if __name__ == "__main__":
    main()
