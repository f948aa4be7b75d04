"""Benchmark: the classic group core's CPU per heartbeat and per JoinGroup/SyncGroup, in-process (issue 22).

    .venv/bin/python benchmarks/classic_core.py [--members 10000] [--heartbeats 50000] [--rounds 5]

No sockets and no codec: one group of N members is formed through ``GroupService.call`` (the call every group
handler makes) on a manual clock, its join and sync phases timed with ``time.process_time``; then rounds of
heartbeats, members in turn, each through the Heartbeat handler's ``handle`` as the server calls it (authorization,
the coordinator check, the service, the timers), the clock one millisecond later per heartbeat so every heartbeat
moves its member's session timer. It prints microseconds of CPU per heartbeat (each round and the minimum: the
machine is shared) and per member for the join and sync phases, with the load average beside them.

For before/after, run this script from two checkouts in turn (``git worktree add /tmp/before REV``; its
``rebalance_lab`` is imported from the checkout the script lives in).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rebalance_lab

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, ProtocolEntry, SyncGroupInput
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.group_service import GroupService, service_of
from rebalance_lab.coordinator.handlers import heartbeat as heartbeat_handler
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.classic_heartbeat_codec import HeartbeatRequest

GROUP = "bench-group"
SESSION_MS = 1_200_000  # 20 minutes: no member expires while the clock moves 1 ms a heartbeat


def _identity(result: Any) -> Any:
    return result


def make_world() -> World:
    config = EmulatorConfig(port=0, seed=1, group=GroupConfig(join_race="separate"))
    return World(config, [BrokerInfo(0, "127.0.0.1", 9092, None)], ManualClock(1_000_000))


def _join(service: GroupService, member_id: str) -> Any:
    inp = JoinGroupInput(GROUP, member_id, "consumer", (ProtocolEntry("range", b"m"),), SESSION_MS, SESSION_MS,
                         api_version=9, client_id="bench")
    return service.call(service.routing.join_group, inp, _identity)


def form_group(world: World, members: int) -> tuple[list[str], int, float, float]:
    """The group formed (every member's id, the generation) and the CPU seconds of its join and sync phases."""
    service = service_of(world)
    started = time.process_time()
    ids = [_join(service, "").value.member_id for _ in range(members)]  # MEMBER_ID_REQUIRED hands out each id
    parked = [_join(service, member_id) for member_id in ids]
    world.clock.advance(SESSION_MS // 2)  # type: ignore[attr-defined]  # the rebalance timeout ends the join
    world.fire_timers()
    joined = time.process_time() - started
    results = [p.value for p in parked]
    if any(r is None or int(r.error) != 0 for r in results):
        raise SystemExit(f"the group did not form: {results[0]}")
    generation, leader = results[0].generation_id, results[0].leader
    started = time.process_time()
    assignment = tuple((member_id, b"a") for member_id in ids)
    service.call(service.routing.sync_group, SyncGroupInput(GROUP, leader, generation, assignments=assignment),
                 _identity)
    for member_id in ids:
        if member_id != leader:
            service.call(service.routing.sync_group, SyncGroupInput(GROUP, member_id, generation), _identity)
    synced = time.process_time() - started
    return ids, generation, joined, synced


def heartbeat_round(world: World, ids: list[str], generation: int, count: int) -> float:
    """CPU seconds of ``count`` heartbeats through the handler, members in turn."""
    ctx = RequestContext(12, 4, 1, "bench", "/127.0.0.1", 1, world.nodes[0], world)
    requests = [HeartbeatRequest(4, GROUP, generation, member_id) for member_id in ids]
    clock = world.clock
    handle = heartbeat_handler.handle
    started = time.process_time()
    for i in range(count):
        clock.advance(1)  # type: ignore[attr-defined]
        parked = handle(ctx, requests[i % len(requests)])
        if parked.value.error_code:
            raise SystemExit(f"heartbeat answered error {parked.value.error_code}")
        world.next_deadline()  # the shell asks after every request
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--heartbeats", type=int, default=50_000, help="heartbeats per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    world = make_world()
    ids, generation, joined, synced = form_group(world, args.members)
    print(f"checkout {Path(__file__).resolve().parents[1]}  members {args.members}  load {os.getloadavg()[0]:.1f}")
    print(f"join phase {joined * 1e6 / args.members:.1f} us/member (2 JoinGroups each), "
          f"sync phase {synced * 1e6 / args.members:.1f} us/member")
    per_heartbeat = []
    for n in range(1, args.rounds + 1):
        us = heartbeat_round(world, ids, generation, args.heartbeats) * 1e6 / args.heartbeats
        per_heartbeat.append(us)
        print(f"round {n}: {us:.2f} us CPU/heartbeat  load {os.getloadavg()[0]:.1f}")
    print(f"heartbeat min {min(per_heartbeat):.2f} us CPU/heartbeat over {args.rounds} rounds of {args.heartbeats}")


if __name__ == "__main__":
    main()
