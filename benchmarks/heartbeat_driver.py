"""The heartbeat load generator of the coordinator benchmarks: raw sockets, one epoll loop, pre-encoded frames.

Each member's connection keeps exactly one Heartbeat in flight, as a real client does (a consumer sends its next
heartbeat only after the previous answer): the next one leaves as soon as the answer arrives. What makes the
driver cheap enough that the server, not the driver, is the limit (issue 22 asks 10,000 heartbeats/s of one
10,000-member group; the asyncio driver before spent more CPU per heartbeat than the server it measured):

* every frame is encoded once, before the run; a heartbeat only gets its next correlation id written in place;
* the sockets are read and written directly (non-blocking, ``select.epoll``, level-triggered), with no event
  loop, transport, protocol, future or callback per answer;
* an answer is checked (its correlation id and error code) where it is read.

The same driver runs against every target (the emulator, Kafka 4.4.0, kfake), so the comparison stays fair.
Its own CPU time is measured (``time.process_time``: the driver is this process's only work while it runs).

As a script, one driver process per target, driven over stdin (benchmarks/coordinator_heartbeats.py):

    python benchmarks/heartbeat_driver.py HOST:PORT MEMBERS
        prints ``ready <seconds to form the group>``, then answers each ``beat SECONDS`` line with one JSON line
        (answered, failed, seconds, driver_cpu_s); ``quit`` makes every member leave and ends it.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_INT32 = struct.Struct(">i")
_CORRELATION_AT = 8  # in a framed request: size (4), api key (2), api version (2), then the correlation id
_READ = 65536
# The members' session: another target's group forms (a minute or two at 10,000 members) while this one waits for
# its rounds (coordinator_heartbeats.py refreshes the sessions after each formation). 290 s: kfake refuses a
# session over 5 minutes (INVALID_SESSION_TIMEOUT), Kafka's and the emulator's default maximum is 30.
SESSION_MS = 290_000


@dataclass
class DriverRun:
    answered: int
    failed: int  # answers with an error code (the first one's code is in ``first_error``)
    seconds: float
    driver_cpu_s: float
    first_error: int = 0

    @property
    def per_second(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    @property
    def driver_us_each(self) -> float:
        return self.driver_cpu_s / self.answered * 1e6 if self.answered else float("nan")


class _Member:
    """One connection: its frame (correlation id rewritten per request), the id it awaits, bytes not yet framed."""

    __slots__ = ("correlation", "frame", "pending", "sock")

    def __init__(self, sock: socket.socket, frame: bytes) -> None:
        self.sock = sock
        self.frame = bytearray(frame)
        self.correlation = _INT32.unpack_from(frame, _CORRELATION_AT)[0]
        self.pending = b""

    def send(self) -> None:
        self.correlation += 1
        _INT32.pack_into(self.frame, _CORRELATION_AT, self.correlation)
        if self.sock.send(self.frame) != len(self.frame):
            raise RuntimeError("a heartbeat frame did not fit the socket's send buffer (one is ever in flight)")


def run_heartbeats(socks: list[socket.socket], frames: list[bytes], seconds: float,
                   error_at: int = 8) -> DriverRun:
    """Keep one heartbeat in flight on every socket for ``seconds``, then wait for the last answers.

    ``frames[i]`` is the framed request of ``socks[i]``'s member; ``error_at`` is where the error code sits in
    an answer's payload (8 for Heartbeat v1-3: correlation id, throttle time). The sockets must be connected
    and carry nothing else meanwhile; they are left as they were (non-blocking), with nothing unread.
    """
    members = {s.fileno(): _Member(s, f) for s, f in zip(socks, frames, strict=True)}
    poller = select.epoll(len(members) + 1)
    for fd in members:
        poller.register(fd, select.EPOLLIN)
    answered = failed = first_error = 0
    in_flight = len(members)
    cpu_started, started = time.process_time(), time.perf_counter()
    stop_at = started + seconds
    for member in members.values():
        member.send()
    try:
        while in_flight:
            events = poller.poll(1.0)
            if not events and time.perf_counter() > stop_at + 30:
                raise RuntimeError(f"{in_flight} heartbeats unanswered 30 s after the run")
            going = time.perf_counter() < stop_at
            for fd, _mask in events:
                member = members[fd]
                data = member.sock.recv(_READ)
                if not data:
                    raise ConnectionError("the server closed a member's connection")
                if member.pending:
                    data = member.pending + data
                size = len(data)
                if size < 4 or size < 4 + int.from_bytes(data[:4], "big"):
                    member.pending = data  # one answer is ever in flight: wait for the rest of it
                    continue
                member.pending = b""
                if int.from_bytes(data[4:8], "big", signed=True) != member.correlation or \
                        size != 4 + int.from_bytes(data[:4], "big"):
                    raise RuntimeError("an answer out of order, or more than one answer to one request")
                error = int.from_bytes(data[4 + error_at:6 + error_at], "big", signed=True)
                answered += 1
                if error:
                    failed += 1
                    first_error = first_error or error
                if going:
                    member.send()
                else:
                    in_flight -= 1
    finally:
        poller.close()
    elapsed = time.perf_counter() - started
    return DriverRun(answered, failed, elapsed, time.process_time() - cpu_started, first_error)


def sockets_of(pipes: list[object]) -> list[socket.socket]:
    """Each asyncio connection's socket as a plain non-blocking socket over the same descriptor (no dup: 10,000
    members' connections are half a process's descriptors already); give them back with :func:`release`.

    The asyncio loop must not run while the driver uses them (the driver blocks it), so no reader competes.
    """
    result = []
    for pipe in pipes:
        raw = pipe.transport.get_extra_info("socket")  # type: ignore[attr-defined]
        sock = socket.socket(raw.family, raw.type, raw.proto, fileno=raw.fileno())
        sock.setblocking(False)
        result.append(sock)
    return result


def release(socks: list[socket.socket]) -> None:
    """Let go of :func:`sockets_of`'s sockets without closing their descriptors (their transports own them)."""
    for sock in socks:
        sock.detach()


# -- as a script: one driver process per target ------------------------------------------------------------


def _serve_commands(bootstrap: str, members: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from coordinator_scale_rebalance import Group, Member, form, leave
    from kip848_targets import Pipe

    async def open_and_form() -> Group:
        host, port = bootstrap.rsplit(":", 1)
        pipes = [await Pipe.open(host, int(port)) for _ in range(members)]
        group = Group(f"heartbeats-{members}-{time.time_ns()}", [Member(p) for p in pipes], session_ms=SESSION_MS)
        await form(group)
        return group

    loop = asyncio.new_event_loop()
    started = time.perf_counter()
    group = loop.run_until_complete(open_and_form())
    print(f"ready {time.perf_counter() - started:.1f}", flush=True)
    frames = [group.heartbeat_frame(m) for m in group.members]
    socks = sockets_of([m.pipe for m in group.members])
    for line in sys.stdin:
        command = line.split()
        if command[:1] == ["beat"]:
            run = run_heartbeats(socks, frames, float(command[1]))
            print(json.dumps(asdict(run)), flush=True)
        elif command[:1] == ["quit"]:
            break
    release(socks)
    loop.run_until_complete(leave(group))
    for member in group.members:
        member.pipe.close()
    loop.close()


if __name__ == "__main__":
    _serve_commands(sys.argv[1], int(sys.argv[2]))
