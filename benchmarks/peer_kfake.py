"""Benchmark: one franz-go workload against the emulator and against kfake (franz-go's fake Kafka), side by side.

    .venv/bin/python benchmarks/peer_kfake.py [--records N] [--partitions P] [--runs R]

tests/go/kfakebench (franz-go v1.22.2 and kfake, pinned in its go.mod/go.sum; built with ``go build`` into
~/.cache/rebalance-lab) creates a topic, produces N records, then consumes them in a consumer group (the join
included), and prints the two times. It runs R times against an emulator started here (one broker, flavor
kafka-4, group.initial.rebalance.delay.ms=0) and R times against an in-process kfake cluster, and prints the
median and best of each. kfake is the peer baseline: an in-memory Go broker inside the client's own process,
with no protocol checks to speak of; the emulator is a separate Python process that answers as Kafka does.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance_lab.api import Emulator

PROGRAM = Path(__file__).resolve().parents[1] / "tests" / "go" / "kfakebench"
BINARY = Path.home() / ".cache" / "rebalance-lab" / "go-kfakebench" / "kfakebench"


def _binary() -> Path:
    sources = [PROGRAM / name for name in ("main.go", "go.mod", "go.sum")]
    if BINARY.exists() and all(BINARY.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return BINARY
    BINARY.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["go", "build", "-buildvcs=false", "-o", str(BINARY), "."], cwd=PROGRAM, check=True, timeout=900)
    return BINARY


def _run(seeds: str, records: int, partitions: int) -> dict[str, float]:
    done = subprocess.run([str(_binary()), "-seeds", seeds, "-records", str(records), "-partitions", str(partitions)],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise SystemExit(f"kfakebench failed against {seeds or 'kfake'}: {done.stderr[-2000:]}")
    return {name: float(value) for name, value in (line.split() for line in done.stdout.splitlines())}


def _print(label: str, runs: list[dict[str, float]], records: int) -> None:
    for key, what in (("produce_ms", f"produce {records} records"), ("consume_ms", f"join + consume {records}")):
        times = [run[key] for run in runs]
        print(f"{label:8} {what:28} median {statistics.median(times):9.1f} ms   best {min(times):9.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with Emulator(port=0, initial_rebalance_delay_ms=0) as emu:
        emulated = [_run(emu.bootstrap_servers, args.records, args.partitions) for _ in range(args.runs)]
    kfake = [_run("", args.records, args.partitions) for _ in range(args.runs)]
    _print("emulator", emulated, args.records)
    _print("kfake", kfake, args.records)


if __name__ == "__main__":
    main()
