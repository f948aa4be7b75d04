"""The side-by-side part of benchmarks/coordinator_scale.py: one big classic group on several targets.

For each target (the emulator, a real Kafka 4.4.0 broker, kfake) and each size N: N raw-protocol members,
one TCP connection each (a parked JoinGroup holds its connection, as in a real client), form the group
(untimed), then a **full rebalance** is timed: the leader rejoins, a follower's heartbeat sees
REBALANCE_IN_PROGRESS, every other member rejoins, each follower sends its SyncGroup as soon as its
JoinGroup is answered, the leader assigns (one partition each) and syncs, until every member holds its
assignment. The server's CPU for it (from /proc) is taken too. After the largest size, plain heartbeats of
every member (one in flight per connection, benchmarks/heartbeat_driver.py) for a few seconds: answers per second,
the server's and the driver's CPU per answer. Then every member leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from heartbeat_driver import DriverRun, release, run_heartbeats, sockets_of
from kip848_targets import Pipe, cpu_seconds

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.assignment_types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription

JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
JOIN_V, SYNC_V, HEARTBEAT_V, LEAVE_V = 5, 3, 3, 3  # not flexible: the error code sits at bytes 8-9
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
TOPIC, PARTITIONS = "scale", 10_000
METADATA = encode_subscription(Subscription(topics=(TOPIC,)))
SESSION_MS = REBALANCE_MS = 120_000
_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
_ASSIGNMENT = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
_LEAVER = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")


def _error(payload: bytes) -> int:
    """Correlation id (4), throttle time (4), error code (2) of a non-flexible response."""
    return int.from_bytes(payload[8:10], "big", signed=True)


@dataclass
class Member:
    pipe: Pipe
    member_id: str = ""
    generation: int = -1


@dataclass
class RebalanceRun:
    target: str
    members: int
    seconds: float
    cpu_s: float | None
    heartbeats_per_s: float | None = None
    heartbeat_cpu_us: float | None = None  # the server's CPU per heartbeat answered (microseconds)
    driver_cpu_us: float | None = None  # the load generator's CPU per heartbeat answered (microseconds)
    round_driver_cpu_s: float | None = None  # the load generator's CPU in the timed round (it shares the cores)
    leader_answer_s: float | None = None  # when the leader's JoinGroup answer was read (from the round's start)
    last_join_answer_s: float | None = None  # when the last JoinGroup answer was read


@dataclass
class Group:
    name: str
    members: list[Member]
    correlation: int = 0
    leader: str = ""
    log: list[str] = field(default_factory=list)
    session_ms: int = SESSION_MS

    def frame(self, api: int, version: int, **fields: Any) -> bytes:
        self.correlation += 1
        return codec.encode_request(codec.new_request(api, version, **fields), self.correlation, "scale")  # type: ignore[no-any-return]

    def join_frame(self, member_id: str) -> bytes:
        return self.frame(JOIN, JOIN_V, group_id=self.name, session_timeout_ms=self.session_ms,
                          rebalance_timeout_ms=REBALANCE_MS, member_id=member_id, group_instance_id=None,
                          protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=METADATA)])

    def sync_frame(self, member: Member, assignments: list[Any]) -> bytes:
        return self.frame(SYNC, SYNC_V, group_id=self.name, generation_id=member.generation,
                          member_id=member.member_id, group_instance_id=None, assignments=assignments)

    def heartbeat_frame(self, member: Member) -> bytes:
        return self.frame(HEARTBEAT, HEARTBEAT_V, group_id=self.name, generation_id=member.generation,
                          member_id=member.member_id, group_instance_id=None)


async def _gather(sends: list[tuple[Pipe, bytes]], on_reply: Callable[[int, bytes], None] | None = None
                  ) -> list[bytes]:
    """Send each frame on its pipe at once; the payloads in the same order."""
    loop = asyncio.get_running_loop()
    results: list[bytes] = [b""] * len(sends)
    futures = [loop.create_future() for _ in sends]

    def answer(i: int) -> Callable[[bytes], None]:
        def done(payload: bytes) -> None:
            results[i] = payload
            if on_reply is not None:
                on_reply(i, payload)
            futures[i].set_result(None)
        return done

    for i, (pipe, frame) in enumerate(sends):
        pipe.send(frame, answer(i))
    await asyncio.gather(*futures)
    return results


def _assignments(response: Any) -> list[Any]:
    """The leader's assignment: one partition per member."""
    return [_ASSIGNMENT(member_id=m.member_id, assignment=encode_assignment(Assignment((TopicPartition(TOPIC, i),))))
            for i, m in enumerate(response.members)]


@dataclass
class Round:
    """What the timed round sends, made before the clock starts: the driver's own work stays out of the figure
    and off the cores the server shares (every target gets the same frames)."""

    joins: dict[str, bytes]  # member id -> its JoinGroup frame
    assignments: list[bytes]  # the i-th member of the leader's list gets assignments[i] (one partition each)
    generation: int = -1  # the generation the round should make (each member's + 1)
    syncs: dict[str, bytes] = field(default_factory=dict)  # a follower's SyncGroup frame for that generation


def prepare_round(group: Group) -> Round:
    """The frames of the round; a follower's SyncGroup for the expected generation too (the one its JoinGroup
    answer names is sent: made then, should the broker hand out another)."""
    generation = group.members[0].generation + 1
    return Round({m.member_id: group.join_frame(m.member_id) for m in group.members},
                 [encode_assignment(Assignment((TopicPartition(TOPIC, i),))) for i in range(len(group.members))],
                 generation, {m.member_id: sync_frame(group, m.member_id, generation, []) for m in group.members})


_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


def _string_at(payload: bytes, pos: int) -> tuple[str, int]:
    (size,) = _I16.unpack_from(payload, pos)
    return ("" if size < 0 else payload[pos + 2:pos + 2 + size].decode()), pos + 2 + max(size, 0)


def join_answer(payload: bytes) -> tuple[int, str, str, list[str]]:
    """(generation, leader, member id, the members' ids) of a JoinGroup v5 answer: correlation id, throttle,
    error, generation, protocol name, leader, member id, members [member id, instance id, metadata]."""
    (generation,) = _I32.unpack_from(payload, 10)
    _name, pos = _string_at(payload, 14)
    leader, pos = _string_at(payload, pos)
    member_id, pos = _string_at(payload, pos)
    (count,) = _I32.unpack_from(payload, pos)
    pos += 4
    members = []
    for _ in range(count):
        member, pos = _string_at(payload, pos)
        _instance, pos = _string_at(payload, pos)
        (size,) = _I32.unpack_from(payload, pos)
        pos += 4 + size
        members.append(member)
    return generation, leader, member_id, members


def _put_string(parts: list[bytes], value: str) -> None:
    raw = value.encode()
    parts += (_I16.pack(len(raw)), raw)


def sync_frame(group: Group, member_id: str, generation: int, assignments: list[tuple[str, bytes]]) -> bytes:
    """A framed SyncGroup v3 (header v1, client id "scale"), the bytes ``Group.sync_frame`` makes, with struct."""
    group.correlation += 1
    parts = [struct.pack(">hhih", SYNC, SYNC_V, group.correlation, 5), b"scale"]
    _put_string(parts, group.name)
    parts.append(_I32.pack(generation))
    _put_string(parts, member_id)
    parts += (b"\xff\xff", _I32.pack(len(assignments)))  # a null group instance id; the assignments
    for assigned, assignment in assignments:
        _put_string(parts, assigned)
        parts += (_I32.pack(len(assignment)), assignment)
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


@dataclass
class Timeline:
    """When the driver read the leader's JoinGroup answer and the last one (perf_counter seconds)."""

    leader: float = 0.0
    last: float = 0.0


async def join_round(group: Group, plan: Round, timeline: Timeline | None = None) -> bool:
    """The timed full rebalance of a Stable group: the leader rejoins first; once a follower's heartbeat says
    REBALANCE_IN_PROGRESS every other member rejoins; each member syncs as soon as its JoinGroup is answered
    (the leader with the assignments); True when every member holds its assignment.

    The driver is Python on the cores the server uses: one future for the whole round and callbacks per answer
    (no future per request), the followers' SyncGroups made beforehand, and no cyclic collection of the driver's
    10,000 connections while the round runs (at 10,000 members it took ~1.1 s of CPU beside the server's ~2 s,
    about half in futures and collections; now ~0.5 s). Every target gets the same driver."""
    loop = asyncio.get_running_loop()
    clock = Timeline() if timeline is None else timeline
    done: asyncio.Future[None] = loop.create_future()
    left = len(group.members)  # SyncGroups still to be answered (a failed JoinGroup sends none)
    failed: list[int] = []

    def finished(error: int) -> None:
        nonlocal left
        if error:
            failed.append(error)
        left -= 1
        if left == 0:
            done.set_result(None)

    def synced(payload: bytes) -> None:
        finished(_error(payload))

    def joined(member: Member, payload: bytes) -> None:
        error = _error(payload)
        if error != 0:
            finished(error)
            return
        member.generation, leader, member.member_id, members = join_answer(payload)
        clock.last = time.perf_counter()
        if leader == member.member_id:
            group.leader = member.member_id
            clock.leader = clock.last
            frame = sync_frame(group, member.member_id, member.generation,
                               list(zip(members, plan.assignments, strict=False)))
        elif member.generation == plan.generation and member.member_id in plan.syncs:
            frame = plan.syncs[member.member_id]
        else:
            frame = sync_frame(group, member.member_id, member.generation, [])
        member.pipe.send(frame, synced)

    def send_join(member: Member) -> None:
        member.pipe.send(plan.joins[member.member_id], lambda payload: joined(member, payload))

    order = list(group.members)
    leader = next(m for m in order if m.member_id == group.leader)
    order.remove(leader)
    send_join(leader)
    await _until_rebalancing(group, order[0])
    for member in order:
        send_join(member)
    await done
    return not failed


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """The driver's objects so far kept out of the collector's way, and no collection meanwhile."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


async def _until_rebalancing(group: Group, follower: Member) -> None:
    for _ in range(2000):
        payload = (await _gather([(follower.pipe, group.heartbeat_frame(follower))]))[0]
        if _error(payload) == REBALANCE_IN_PROGRESS:
            return
        await asyncio.sleep(0.005)
    raise RuntimeError("the leader's rejoin did not start a rebalance")


async def _call(group: Group, member: Member, frame: bytes) -> bytes:
    return (await _gather([(member.pipe, frame)]))[0]


async def _member_until_settled(group: Group, member: Member, synced: dict[str, int],
                                settled: asyncio.Event) -> None:
    """A member as a client runs it: join, sync (rejoin on REBALANCE_IN_PROGRESS), then heartbeat every
    500 ms until the whole group is synced in one generation, rejoining when a heartbeat says so."""
    while True:
        payload = await _call(group, member, group.join_frame(member.member_id))
        if _error(payload) != 0:
            raise RuntimeError(f"JoinGroup failed with {_error(payload)}")
        response = codec.decode_response(JOIN, JOIN_V, payload)
        member.generation = response.generation_id
        is_leader = response.leader == response.member_id
        if is_leader:
            group.leader = member.member_id
        sync = await _call(group, member, group.sync_frame(member, _assignments(response) if is_leader else []))
        if _error(sync) == REBALANCE_IN_PROGRESS:
            continue
        if _error(sync) != 0:
            raise RuntimeError(f"SyncGroup failed with {_error(sync)}")
        synced[member.member_id] = member.generation
        if len(synced) == len(group.members) and len(set(synced.values())) == 1:
            settled.set()
        while not settled.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(settled.wait(), 0.5)
            if settled.is_set():
                return
            if _error(await _call(group, member, group.heartbeat_frame(member))) == REBALANCE_IN_PROGRESS:
                del synced[member.member_id]
                break
        else:
            return


async def form(group: Group) -> None:
    """MEMBER_ID_REQUIRED for everyone, then every member joins and syncs until the group is one generation."""
    ids = await _gather([(m.pipe, group.join_frame("")) for m in group.members])
    for member, payload in zip(group.members, ids, strict=True):
        member.member_id = codec.decode_response(JOIN, JOIN_V, payload).member_id
    synced: dict[str, int] = {}
    settled = asyncio.Event()
    await asyncio.wait_for(asyncio.gather(*(_member_until_settled(group, m, synced, settled) for m in group.members)),
                           600)


async def heartbeat_rate(group: Group, seconds: float) -> DriverRun:
    """Every member keeps one heartbeat in flight for ``seconds`` (benchmarks/heartbeat_driver.py: raw sockets and
    pre-encoded frames, the same cheap driver for every target; the asyncio loop waits meanwhile)."""
    frames = [group.heartbeat_frame(m) for m in group.members]
    socks = sockets_of([m.pipe for m in group.members])
    try:
        run = run_heartbeats(socks, frames, seconds)
    finally:
        release(socks)
    if run.failed:
        raise RuntimeError(f"{run.failed} heartbeats answered with an error (the first: {run.first_error})")
    return run


async def leave(group: Group) -> None:
    chunks = [group.members[i:i + 1000] for i in range(0, len(group.members), 1000)]
    for chunk in chunks:
        frame = group.frame(LEAVE, LEAVE_V, group_id=group.name,
                            members=[_LEAVER(member_id=m.member_id, group_instance_id=None) for m in chunk])
        await _gather([(group.members[0].pipe, frame)])


async def one_size(target: str, bootstrap: str, n: int, pid: int | None, heartbeat_s: float) -> RebalanceRun:
    host, port = bootstrap.rsplit(":", 1)
    pipes = [await Pipe.open(host, int(port)) for _ in range(n)]
    group = Group(f"scale-{target}-{n}-{time.time_ns()}", [Member(p) for p in pipes])
    try:
        await form(group)
        plan = prepare_round(group)
        timeline = Timeline()
        with _no_collections():
            cpu_before = cpu_seconds(pid)
            driver_before = time.process_time()
            started = time.perf_counter()
            if not await join_round(group, plan, timeline):
                raise RuntimeError(f"{target}: the timed rebalance of {n} members did not complete in one round")
            seconds = time.perf_counter() - started
            driver_cpu = time.process_time() - driver_before
            cpu_after = cpu_seconds(pid)
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        run = RebalanceRun(target, n, seconds, cpu, round_driver_cpu_s=driver_cpu,
                           leader_answer_s=timeline.leader - started, last_join_answer_s=timeline.last - started)
        if heartbeat_s > 0:
            cpu_before = cpu_seconds(pid)
            driven = await heartbeat_rate(group, heartbeat_s)
            cpu_after = cpu_seconds(pid)
            run.heartbeats_per_s, run.driver_cpu_us = driven.per_second, driven.driver_us_each
            if cpu_before is not None and cpu_after is not None:
                run.heartbeat_cpu_us = (cpu_after - cpu_before) / max(1, driven.answered) * 1e6
        await leave(group)
        return run
    finally:
        for p in pipes:
            p.close()


def exponent(small: tuple[int, float], large: tuple[int, float]) -> float:
    return math.log(large[1] / small[1]) / math.log(large[0] / small[0])


def report(runs: dict[tuple[str, int], RebalanceRun], targets: list[str], sizes: list[int]) -> list[str]:
    lines = []
    for target in targets:
        done = [runs[target, n] for n in sizes if (target, n) in runs]
        for run in done:
            cpu = f", server CPU {run.cpu_s:.2f} s" if run.cpu_s is not None else ""
            if run.round_driver_cpu_s is not None:
                cpu += f", driver CPU {run.round_driver_cpu_s:.2f} s"
            if run.leader_answer_s is not None and run.last_join_answer_s is not None:
                cpu += (f" (the leader's JoinGroup answer read at {run.leader_answer_s:.2f} s, the last at "
                        f"{run.last_join_answer_s:.2f} s)")
            rate = f"; {run.heartbeats_per_s:,.0f} heartbeats/s" if run.heartbeats_per_s else ""
            if run.heartbeat_cpu_us is not None:
                rate += f" (server CPU {run.heartbeat_cpu_us:.0f} us each, driver {run.driver_cpu_us:.0f} us)"
            lines.append(f"{target:8} N={run.members:6}: full rebalance {run.seconds:7.2f} s{cpu}{rate}")
        if len(done) >= 2:
            first, last = done[0], done[-1]
            grows = f"{target:8} growth exponent N={first.members}->{last.members}: wall " \
                    f"{exponent((first.members, first.seconds), (last.members, last.seconds)):.2f}"
            if first.cpu_s and last.cpu_s:
                grows += f", server CPU {exponent((first.members, first.cpu_s), (last.members, last.cpu_s)):.2f}"
            lines.append(grows + " (goal for the emulator: <= 1.1)")
    for peer in (t for t in targets if t != "emulator"):
        for n in sizes:
            if ("emulator", n) in runs and (peer, n) in runs:
                emu, other = runs["emulator", n], runs[peer, n]
                lines.append(f"ratio N={n:6}: {peer}/emulator full rebalance {other.seconds / emu.seconds:5.2f}x"
                             " (goal > 1: the emulator faster)")
    return lines


@contextlib.contextmanager
def kfake_target(binary: str) -> Iterator[tuple[str, int | None]]:
    proc = subprocess.Popen([binary, "-serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip(), proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
