"""Benchmark: emulator start-up time and kafka-python produce+consume throughput.

    .venv/bin/python benchmarks/startup_and_throughput.py [--records N] [--runs N]

Prints:
* the time from launching ``rebalance-lab serve`` as a new process to the first
  ApiVersions answer on its port (goal: under 0.5 s), min/median over runs;
* the time for the in-process server to start accepting connections;
* kafka-python producing N keyed records (acks=all) to a 3-partition topic and
  consuming them back, in records per second and MB per second.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer

_API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, 0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.05) as sock:
            sock.sendall(_API_VERSIONS_V0)
            return len(sock.recv(4)) == 4
    except OSError:
        return False


def subprocess_startup_seconds() -> float:
    port = _free_port()
    exe = Path(sys.executable).with_name("rebalance-lab")
    started = time.perf_counter()
    proc = subprocess.Popen([str(exe), "serve", "--port", str(port)], stdout=subprocess.DEVNULL)
    try:
        while not _answers(port):
            if proc.poll() is not None:
                raise RuntimeError(f"rebalance-lab serve exited with {proc.returncode}")
            if time.perf_counter() - started > 30:
                raise RuntimeError("rebalance-lab serve did not answer within 30 s")
            time.sleep(0.002)
        return time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(10)


def in_process_startup_seconds() -> float:
    async def run() -> float:
        started = time.perf_counter()
        server = EmulatorServer(EmulatorConfig(port=0))
        await server.start()
        elapsed = time.perf_counter() - started
        await server.stop()
        return elapsed

    return asyncio.run(run())


class BackgroundEmulator:
    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.server = EmulatorServer(config)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.start())
        self.ready.set()
        self.loop.run_forever()

    def __enter__(self) -> BackgroundEmulator:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def kafka_python_throughput(records: int, value_size: int) -> tuple[float, float]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    with BackgroundEmulator(EmulatorConfig(port=0, topics=(("bench", 3),))) as emu:
        bootstrap = emu.server.bootstrap_servers
        value = b"v" * value_size
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        started = time.perf_counter()
        for i in range(records):
            producer.send("bench", key=str(i).encode(), value=value)
        producer.flush()
        produced = time.perf_counter() - started
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        consumer.assign([TopicPartition("bench", p) for p in range(3)])
        started = time.perf_counter()
        seen = 0
        while seen < records and time.perf_counter() - started < 120:
            for batch in consumer.poll(timeout_ms=500).values():
                seen += len(batch)
        consumed = time.perf_counter() - started
        consumer.close()
        if seen != records:
            raise RuntimeError(f"consumed {seen} of {records} records")
        return produced, consumed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    runs = [subprocess_startup_seconds() for _ in range(args.runs)]
    print(f"process start -> first ApiVersions answer: min {min(runs) * 1000:.0f} ms, "
          f"median {statistics.median(runs) * 1000:.0f} ms over {args.runs} runs (goal < 500 ms)")
    inproc = [in_process_startup_seconds() for _ in range(args.runs)]
    print(f"in-process EmulatorServer.start(): median {statistics.median(inproc) * 1000:.1f} ms")
    produced, consumed = kafka_python_throughput(args.records, args.value_size)
    mb = args.records * args.value_size / 1e6
    print(f"kafka-python produce {args.records} records x {args.value_size} B: {produced:.2f} s "
          f"({args.records / produced:,.0f} rec/s, {mb / produced:.1f} MB/s)")
    print(f"kafka-python consume {args.records} records: {consumed:.2f} s "
          f"({args.records / consumed:,.0f} rec/s, {mb / consumed:.1f} MB/s)")


if __name__ == "__main__":
    main()
