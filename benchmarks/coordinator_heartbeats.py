"""Benchmark: heartbeats per second sustained by one big classic group, side by side (issue 22).

    .venv/bin/python benchmarks/coordinator_heartbeats.py [--members 10000] [--seconds 5] [--rounds 3]
        [--targets emulator,kafka,kfake] [--compare DIR] [--serve-arg=--some-option ...]

Each target serves one group of N raw members, one connection each, formed untimed (Kafka's default initial delay
of 3 s on every target). Each target has its own driver process (benchmarks/heartbeat_driver.py: raw sockets, one
epoll loop, pre-encoded frames, one heartbeat in flight per member connection as a real client keeps), so every
target meets the same load generator. Then rounds of ``--seconds`` of heartbeats, the targets taking turns
(round 1 on each, then round 2 on each, ...: a machine whose load changes affects them alike), and per round:

* answers per second (issue 22's goal: >= 10,000/s at 10,000 members);
* the server's CPU per answer (its process and descendants, from /proc) and the driver's (``process_time``),
  in microseconds: when server + driver stay well under the machine's cores, neither is saturated;
* the 1-minute load average then (the machine is shared).

``--compare DIR`` (repeatable) adds ``emulator@DIR``: the emulator of another checkout (``git worktree add /tmp/before
REV``), alternating with this one (before/after in one run; ``--targets ''`` leaves only the checkouts compared).
Only one Kafka broker runs at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, for the broker

from coordinator_scale_rebalance import kfake_target
from kip848_targets import EmulatorProcess, broker_target, cpu_seconds

DRIVER = Path(__file__).resolve().with_name("heartbeat_driver.py")


@dataclass
class Round:
    per_second: float
    server_us: float | None
    driver_us: float
    load: float
    errors: int


@dataclass
class Target:
    name: str
    pid: int | None
    driver: subprocess.Popen[str]
    formed_s: float
    rounds: list[Round] = field(default_factory=list)

    def _command(self, seconds: float) -> dict[str, Any]:
        assert self.driver.stdin is not None and self.driver.stdout is not None
        self.driver.stdin.write(f"beat {seconds}\n")
        self.driver.stdin.flush()
        line = self.driver.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the driver ended")
        return json.loads(line)  # type: ignore[no-any-return]

    def refresh(self) -> None:
        """One heartbeat per member, not measured: the sessions start again while other targets' groups form."""
        self._command(0)

    def beat(self, seconds: float) -> Round:
        before = cpu_seconds(self.pid)
        run = self._command(seconds)
        after = cpu_seconds(self.pid)
        answered = max(1, run["answered"])
        server_us = None if before is None or after is None else (after - before) / answered * 1e6
        result = Round(answered / run["seconds"], server_us, run["driver_cpu_s"] / answered * 1e6,
                       os.getloadavg()[0], run["failed"])
        self.rounds.append(result)
        return result


def _start_driver(name: str, bootstrap: str, members: int, pid: int | None) -> Target:
    driver = subprocess.Popen([sys.executable, str(DRIVER), bootstrap, str(members)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    line = driver.stdout.readline().split()
    if line[:1] != ["ready"]:
        driver.kill()
        raise RuntimeError(f"{name}: the driver could not form the group")
    print(f"{name:24} group of {members} members formed in {line[1]} s", flush=True)
    return Target(name, pid, driver, float(line[1]))


@contextlib.contextmanager
def _server(name: str, serve_args: list[str]) -> Iterator[tuple[str, int | None]]:
    if name.startswith("emulator"):
        source = name.partition("@")[2] or None
        emulator = EmulatorProcess("--initial-rebalance-delay-ms", "3000", *serve_args, source=source)
        try:
            yield emulator.bootstrap, emulator.proc.pid
        finally:
            emulator.stop()
    elif name == "kafka":
        # A 10,000-member group's metadata record is over the default message.max.bytes (coordinator_scale.py)
        with broker_target("stock", {"message.max.bytes": "10485760"}) as (bootstrap, pid):
            yield bootstrap, pid
    elif name == "kfake":
        from peer_kfake import _binary

        with kfake_target(str(_binary())) as (bootstrap, pid):
            yield bootstrap, pid
    else:
        raise SystemExit(f"unknown target {name!r} (emulator, kafka, kfake)")


def _line(name: str, index: int, r: Round) -> str:
    server = f"{r.server_us:6.1f}" if r.server_us is not None else "     ?"
    errors = f", {r.errors} errors" if r.errors else ""
    return (f"{name:24} round {index}: {r.per_second:9,.0f} heartbeats/s, server CPU {server} us each, "
            f"driver CPU {r.driver_us:5.1f} us each (load {r.load:.1f}){errors}")


def _summary(targets: list[Target], members: int) -> list[str]:
    lines = [f"== medians, one group of {members} members ({os.cpu_count()} cores) =="]
    for t in targets:
        rate = statistics.median(r.per_second for r in t.rounds)
        server = [r.server_us for r in t.rounds if r.server_us is not None]
        server_text = f"{statistics.median(server):6.1f}" if server else "     ?"
        lines.append(f"{t.name:24} {rate:9,.0f} heartbeats/s, server CPU {server_text} us each, driver CPU "
                     f"{statistics.median(r.driver_us for r in t.rounds):5.1f} us each (goal: >= 10,000/s)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", default="emulator,kafka,kfake", help="emulator, kafka (a 4.4.0 broker), kfake")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also the emulator of another checkout, alternating (repeatable)")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra option of this emulator's serve")
    args = parser.parse_args()
    names = [name for name in args.targets.split(",") if name]
    at = names.index("emulator") + 1 if "emulator" in names else 0
    names[at:at] = [f"emulator@{source}" for source in args.compare]
    print(f"== heartbeats of one group of {args.members} members on {', '.join(names)} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores) ==", flush=True)
    targets: list[Target] = []
    with contextlib.ExitStack() as stack:
        for name in names:
            serve_args = args.serve_arg if name == "emulator" else []
            bootstrap, pid = stack.enter_context(_server(name, serve_args))
            target = _start_driver(name, bootstrap, args.members, pid)
            stack.callback(_quit, target)
            for formed in targets:
                formed.refresh()
            targets.append(target)
        for index in range(1, args.rounds + 1):
            for target in targets:
                print(_line(target.name, index, target.beat(args.seconds)), flush=True)
    print("\n".join(_summary(targets, args.members)))


def _quit(target: Target) -> None:
    assert target.driver.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        target.driver.stdin.write("quit\n")
        target.driver.stdin.flush()
    try:
        target.driver.wait(120)
    except subprocess.TimeoutExpired:
        target.driver.kill()


if __name__ == "__main__":
    main()
