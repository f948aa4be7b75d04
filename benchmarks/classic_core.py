"""Benchmark: the classic group core's CPU per heartbeat and per JoinGroup/SyncGroup, in-process (issue 22).

    .venv/bin/python benchmarks/classic_core.py [--members 10000] [--heartbeats 50000] [--rounds 5]
    .venv/bin/python benchmarks/classic_core.py --rebalances 3 [--members 10000] [--callgrind] [--no-collector-pause]

No sockets and no codec: one group of N members is formed through ``GroupService.call`` (the call every group
handler makes) on a manual clock, its join and sync phases timed with ``time.process_time``; then rounds of
heartbeats, members in turn, each through the Heartbeat handler's ``handle`` as the server calls it (authorization,
the coordinator check, the service, the timers), the clock one millisecond later per heartbeat so every heartbeat
moves its member's session timer. It prints microseconds of CPU per heartbeat (each round and the minimum: the
machine is shared) and per member for the join and sync phases, with the load average beside them.

With ``--rebalances R`` it times R full rebalances instead, as coordinator_scale.py's timed phase makes them but
without sockets: the group formed (untimed) from wire frames, then per rebalance the leader's JoinGroup (v5), every
follower's, each follower's SyncGroup (v3) and last the leader's with every member's assignment, each frame read by
``codec.decode_request`` (the fast path, else the generic codec), handled by its handler's ``handle`` and every
answer written by ``codec.encode_response`` when it is resolved, as the shell does. It prints CPU per member of each
rebalance and the minimum; ``--callgrind`` runs the same under ``valgrind --tool=callgrind`` and prints the
instructions per member of the rebalances alone (load-independent; the counters are zeroed as the first frame is
sent by a ``getppid()`` call and dumped after the last answer by a ``getpgrp()`` call, neither made anywhere else).
The group service has serve's collector pause (coordinator/collector_pause.py) unless ``--no-collector-pause``.

For before/after, run this script from two checkouts in turn (``git worktree add /tmp/before REV``; its
``rebalance_lab`` is imported from the checkout the script lives in).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's rebalance_lab

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, ProtocolEntry, SyncGroupInput
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.collector_pause import CollectorPause
from rebalance_lab.coordinator.group_service import GroupService, service_of
from rebalance_lab.coordinator.handlers import heartbeat as heartbeat_handler
from rebalance_lab.coordinator.handlers import join_group as join_handler
from rebalance_lab.coordinator.handlers import sync_group as sync_handler
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.assignment_types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.classic_heartbeat_codec import HeartbeatRequest
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription

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


# -- full rebalances through the codec and the handlers (--rebalances) ---------------------------------------------

JOIN_V, SYNC_V = 5, 3  # coordinator_scale.py's versions
TOPIC = "scale"
_PROTOCOL = codec.data_class(codec.request_type(join_handler.API_KEY), "JoinGroupRequestProtocol")
_ASSIGNMENT = codec.data_class(codec.request_type(sync_handler.API_KEY), "SyncGroupRequestAssignment")
_METADATA = encode_subscription(Subscription(topics=(TOPIC,)))


class Wire:
    """Frames in, answers out, as the shell passes them: decode, the handler, encode when the answer is ready."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.answers: dict[int, bytes] = {}  # correlation id -> the framed answer
        self._correlation = 0

    def frame(self, api_key: int, version: int, **fields: Any) -> bytes:
        """An unframed request as a client sends it (made before any timing)."""
        self._correlation += 1
        return codec.encode_request(codec.new_request(api_key, version, **fields), self._correlation, "bench")[4:]

    def send(self, payload: bytes) -> None:
        request = codec.decode_request(payload)
        ctx = RequestContext(request.api_key, request.api_version, request.correlation_id, request.client_id,
                             "/127.0.0.1", request.correlation_id, self.world.nodes[0], self.world)
        handle = join_handler.handle if request.api_key == join_handler.API_KEY else sync_handler.handle
        result = handle(ctx, request.body)
        correlation = request.correlation_id
        if isinstance(result, Parked) and not result.done:
            result.on_resolve = lambda body: self._answer(body, correlation)
        else:
            self._answer(result.value if isinstance(result, Parked) else result, correlation)
        self.world.next_deadline()  # the shell asks after every request

    def _answer(self, body: Any, correlation: int) -> None:
        self.answers[correlation] = codec.encode_response(body, correlation)

    def error_of(self, payload: bytes) -> int:
        """The answer's error code (JoinGroup v5 and SyncGroup v3: size, correlation id, throttle time, error)."""
        correlation = int.from_bytes(payload[4:8], "big")
        return int.from_bytes(self.answers.pop(correlation)[12:14], "big", signed=True)


def _join_frame(wire: Wire, member_id: str) -> bytes:
    return wire.frame(join_handler.API_KEY, JOIN_V, group_id=GROUP, session_timeout_ms=SESSION_MS,
                      rebalance_timeout_ms=SESSION_MS, member_id=member_id, group_instance_id=None,
                      protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=_METADATA)])


def _sync_frame(wire: Wire, member_id: str, generation: int, assignments: list[Any]) -> bytes:
    return wire.frame(sync_handler.API_KEY, SYNC_V, group_id=GROUP, generation_id=generation, member_id=member_id,
                      group_instance_id=None, assignments=assignments)


def _expect(wire: Wire, frames: list[bytes], error: int, what: str) -> None:
    for payload in frames:
        got = wire.error_of(payload)
        if got != error:
            raise SystemExit(f"{what} answered error {got}, expected {error}")


def wire_group(members: int, pause: bool = True) -> tuple[Wire, list[str]]:
    """A group of ``members`` formed from frames (untimed): ids handed out, the join completed, every member synced;
    ``pause``: with serve's collector pause (collector_pause.py; an embedded emulator has none)."""
    world = make_world()
    if pause:
        service_of(world).collector_pause = CollectorPause()
    wire = Wire(world)
    ids = []
    for _ in range(members):
        payload = _join_frame(wire, "")
        wire.send(payload)
        correlation = int.from_bytes(payload[4:8], "big")
        answer = wire.answers.pop(correlation)
        # v5: size, correlation id, throttle time, error 79, generation, "" protocol name, "" leader, member id
        ids.append(answer[24:24 + int.from_bytes(answer[22:24], "big")].decode())
    _form(wire, ids)
    return wire, ids


def _group_state(wire: Wire) -> tuple[int, str]:
    view = service_of(wire.world).coordinator.group(GROUP)
    assert view is not None
    return view.generation_id, view.leader_id or ""


def rebalance_frames(wire: Wire, ids: list[str]) -> tuple[list[bytes], list[bytes]]:
    """The next rebalance's JoinGroups (the leader's first) and SyncGroups (the leader's, with every member's
    assignment, last), made before the clock starts as coordinator_scale.py makes its round."""
    generation, leader = _group_state(wire)
    order = [leader, *(m for m in ids if m != leader)]
    joins = [_join_frame(wire, member_id) for member_id in order]
    syncs = [_sync_frame(wire, member_id, generation + 1, []) for member_id in order[1:]]
    syncs.append(_sync_frame(wire, leader, generation + 1, _assignments(ids)))
    return joins, syncs


def _assignments(ids: list[str]) -> list[Any]:
    return [_ASSIGNMENT(member_id=m, assignment=encode_assignment(Assignment((TopicPartition(TOPIC, i),))))
            for i, m in enumerate(ids)]


def send_all(wire: Wire, frames: list[bytes], marked: bool = False) -> float:
    """CPU seconds of sending every frame (their answers are kept, checked after the clock stops); ``marked``: between
    callgrind's zero (a getppid call) and dump (a getpgrp call) marks, when run under --callgrind."""
    marked = marked and os.environ.get("CLASSIC_CORE_CALLGRIND") == "1"
    if marked:
        os.getppid()
    started = time.process_time()
    for payload in frames:
        wire.send(payload)
    spent = time.process_time() - started
    if marked:
        os.getpgrp()
    return spent


def one_rebalance(wire: Wire, ids: list[str]) -> float:
    """CPU seconds of one full rebalance of a formed group; every answer checked (no error)."""
    joins, syncs = rebalance_frames(wire, ids)
    spent = send_all(wire, joins + syncs, marked=True)
    _expect(wire, joins, 0, "JoinGroup")
    _expect(wire, syncs, 0, "SyncGroup")
    return spent


def _form(wire: Wire, ids: list[str]) -> None:
    joins = [_join_frame(wire, member_id) for member_id in ids]
    send_all(wire, joins)
    wire.world.clock.advance(SESSION_MS)  # type: ignore[attr-defined]  # the initial delay ends the join
    wire.world.fire_timers()
    generation, leader = _group_state(wire)
    syncs = [_sync_frame(wire, m, generation, _assignments(ids) if m == leader else []) for m in ids]
    send_all(wire, syncs)
    _expect(wire, joins, 0, "JoinGroup")
    _expect(wire, syncs, 0, "SyncGroup")


def rebalances(members: int, count: int, pause: bool = True) -> None:
    wire, ids = wire_group(members, pause)
    print(f"checkout {Path(__file__).resolve().parents[1]}  members {members}  load {os.getloadavg()[0]:.1f}")
    spent = []
    for n in range(1, count + 1):
        seconds = one_rebalance(wire, ids)
        spent.append(seconds)
        print(f"rebalance {n}: {seconds:.3f} s CPU, {seconds * 1e6 / members:.1f} us CPU/member  "
              f"load {os.getloadavg()[0]:.1f}")
    print(f"rebalance min {min(spent) * 1e6 / members:.1f} us CPU/member over {count} rebalances of {members}")
    pause = service_of(wire.world).collector_pause
    print(f"collector pause: {'off' if pause is None else f'{pause.holds} holds'}")


def callgrind(members: int, count: int) -> None:
    """Run the rebalances under callgrind; the instructions between the marks, per member and rebalance."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--zero-before=getppid",
                   "--dump-before=getpgrp", sys.executable, __file__, "--members", str(members),
                   "--rebalances", str(count)]
        subprocess.run(command, check=True, env={**os.environ, "CLASSIC_CORE_CALLGRIND": "1"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dumps = sorted((f for f in os.listdir(tmp) if re.fullmatch(r"callgrind\.out\.\d+", f)),
                       key=lambda f: int(f.rsplit(".", 1)[1]))
        totals = [_total(os.path.join(tmp, f)) for f in dumps]
    if len(totals) != count:
        raise SystemExit(f"expected {count} callgrind dumps, found {len(totals)}")
    print(f"checkout {Path(__file__).resolve().parents[1]}  members {members}")
    for n, total in enumerate(totals, 1):
        print(f"rebalance {n}: {total / members / 1e3:.1f}k instructions/member")
    print(f"rebalance min {min(totals) / members / 1e3:.1f}k instructions/member over {count} rebalances")


def _total(path: str) -> int:
    with open(path) as dump:
        for line in dump:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--heartbeats", type=int, default=50_000, help="heartbeats per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rebalances", type=int, default=0, help="time this many full rebalances instead")
    parser.add_argument("--callgrind", action="store_true", help="with --rebalances: instructions under callgrind")
    parser.add_argument("--no-collector-pause", action="store_true",
                        help="with --rebalances: without serve's collector pause (as an embedded emulator runs)")
    args = parser.parse_args()
    if args.rebalances:
        if args.callgrind:
            callgrind(args.members, args.rebalances)
        else:
            rebalances(args.members, args.rebalances, not args.no_collector_pause)
        return
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
