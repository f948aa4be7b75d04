"""A recorded emulator scenario for the replay tests: two groups, light members, joins, leaves, a crash,
a static restart, an eager (range) and a cooperative (cooperative-sticky) group.

``record(path)`` plays it against an in-process emulator with ``record_path=path`` and returns when every
member is gone; the recording's GENERATION_SNAPSHOT rows are then what the replay must rebuild.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember, Phase

TOPICS = [("orders", 6), ("audit", 3), ("payments", 8)]
EAGER_GROUP = "orders-service"
COOPERATIVE_GROUP = "payments-service"


def _member(bootstrap: str, group: str, topics: list[str], name: str, assignors: list[str],
            **extra: object) -> GroupMember:
    settings: dict[str, object] = {"client_id": name, "session_timeout_ms": 6_000, "rebalance_timeout_ms": 5_000,
                                   "heartbeat_interval_ms": 50, **extra}
    return GroupMember(bootstrap, group, topics, assignors, **settings)  # type: ignore[arg-type]


async def _stable(members: list[GroupMember], generation: int, timeout_s: float = 15.0) -> None:
    """Every member synced at ``generation`` or later, and none rejoining."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        gens = {m.generation_id for m in members}
        if len(gens) == 1 and min(gens) >= generation and all(m.phase is Phase.STABLE for m in members):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"members did not settle at generation {generation}: "
                       f"{[(m.client_id, m.generation_id, m.phase) for m in members]}")


async def _eager(bootstrap: str) -> None:
    """range: a, b join; static s joins; b leaves; s restarts without a rebalance; crash expires."""
    topics = ["orders", "audit"]
    a = _member(bootstrap, EAGER_GROUP, topics, "a", ["range", "roundrobin"])
    b = _member(bootstrap, EAGER_GROUP, topics, "b", ["range"])
    await a.join()
    await b.join()
    await _stable([a, b], 2)
    s = _member(bootstrap, EAGER_GROUP, topics, "s", ["range"], group_instance_id="s-static")
    await s.join()
    await _stable([a, b, s], 3)
    await b.close(leave=True)
    await _stable([a, s], 4)
    await s.close(leave=False)  # a static member does not leave on close (KIP-345)
    s = _member(bootstrap, EAGER_GROUP, topics, "s", ["range"], group_instance_id="s-static")
    await s.join()  # same generation: the coordinator swaps in the new member id
    crash = _member(bootstrap, EAGER_GROUP, topics, "crash", ["range"], session_timeout_ms=300)
    await crash.join()
    await _stable([a, s, crash], 5)
    await crash.close(leave=False)  # no LeaveGroup: the session timeout expires it
    await _stable([a, s], 6)
    await asyncio.gather(a.close(leave=True), s.close(leave=True))


async def _cooperative(bootstrap: str) -> None:
    """cooperative-sticky: x, y, z join one by one (each with its follow-up round), then x leaves."""
    topics = ["payments"]
    x = _member(bootstrap, COOPERATIVE_GROUP, topics, "x", ["cooperative-sticky"])
    y = _member(bootstrap, COOPERATIVE_GROUP, topics, "y", ["cooperative-sticky"])
    z = _member(bootstrap, COOPERATIVE_GROUP, topics, "z", ["cooperative-sticky"])
    await x.join()
    await y.join()
    await _stable([x, y], 3)
    await z.join()
    await _stable([x, y, z], 5)
    await x.close(leave=True)
    await _stable([y, z], 6)
    await asyncio.gather(y.close(leave=True), z.close(leave=True))


async def record_async(path: Path) -> None:
    async with Emulator(topics=TOPICS, record_path=str(path), initial_rebalance_delay_ms=0,
                        min_session_timeout_ms=100) as emu:
        await asyncio.gather(_eager(emu.bootstrap_servers), _cooperative(emu.bootstrap_servers))


def record(path: Path) -> Path:
    asyncio.run(record_async(path))
    return path
