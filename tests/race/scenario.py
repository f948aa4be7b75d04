"""The delay-0 join race as a raw-protocol scenario, run the same way on the emulator and on a real broker.

Three members each get their id (JoinGroup v5 with member id "", answered MEMBER_ID_REQUIRED), then
rejoin with it: all three rejoins in one burst, or spaced by ``spacing_ms`` (``time.sleep`` between two
writes, as ``asyncio.sleep`` cannot wait half a millisecond). With ``group.initial.rebalance.delay.ms=0``
the first rejoin starts the group's initial rebalance with a zero delay; whether the other rejoins get
in before that delay's expiration decides how many members generation 1 holds. A run's outcome is that
number: the answers carrying the first generation, read until none came for ``_SETTLE_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection

JOIN, FIND_COORDINATOR = 11, 10
MEMBERS = 3
_SETTLE_S = 0.3  # parked rejoins of a later generation stay parked; the first generation answers at once


@dataclass(frozen=True)
class RaceShares:
    """How many runs ended with how many members in generation 1."""

    spacing_ms: float
    first_generation_sizes: tuple[int, ...]

    @property
    def runs(self) -> int:
        return len(self.first_generation_sizes)

    @property
    def together(self) -> int:
        """Runs whose generation 1 held every member (one generation, no extra rebalance)."""
        return sum(1 for size in self.first_generation_sizes if size == MEMBERS)

    def summary(self) -> str:
        counts = Counter(self.first_generation_sizes)
        sizes = " ".join(f"{size}:{counts[size]}" for size in sorted(counts))
        return f"spacing {self.spacing_ms:g} ms: together {self.together}/{self.runs} (generation-1 sizes {sizes})"


def _join_fields(group_id: str, member_id: str) -> dict[str, Any]:
    proto = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    return dict(group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member_id,
                group_instance_id=None, protocol_type="consumer", protocols=[proto(name="range", metadata=b"")])


async def wait_for_coordinator(host: str, port: int, group_id: str, timeout_s: float = 60.0) -> None:
    """A fresh broker answers COORDINATOR_NOT_AVAILABLE until ``__consumer_offsets`` is ready."""
    conn = await RawConnection.open(host, port)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            answer = await conn.request(FIND_COORDINATOR, 1, key=group_id, key_type=0)
            if answer.error_code == 0 or time.monotonic() > deadline:
                return
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


def _pause(seconds: float) -> None:
    """Sleep between two writes: ``time.sleep`` (a high-resolution timer, ~50 us late), not ``asyncio.sleep``
    (the loop's 1 ms resolution), and not a busy wait. A spinning client held the core the kernel woke the
    server on: a traced emulator read the first rejoin 1-2 ms late, with the next, so the spacing measured the
    scheduler rather than the coordinator (a many-threaded broker's network thread is less often woken there)."""
    time.sleep(seconds)


async def _answers(conns: Sequence[RawConnection]) -> list[Any]:
    """Every rejoin answer that arrives until none has come for ``_SETTLE_S`` (the first may take longer)."""
    reads = {asyncio.ensure_future(conn.read_frame(timeout=30.0)): conn for conn in conns}
    answers: list[Any] = []
    timeout = 10.0
    while reads:
        done, _ = await asyncio.wait(reads, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            break
        for task in done:
            reads.pop(task)
            with contextlib.suppress(Exception):
                answers.append(codec.decode_response(JOIN, 5, task.result()))
        timeout = _SETTLE_S
    for task in reads:
        task.cancel()
    await asyncio.gather(*reads, return_exceptions=True)
    return answers


async def run_once(host: str, port: int, group_id: str, spacing_ms: float) -> int:
    """One race: the number of members generation 1 holds (3: one generation; 1: the first rejoin alone)."""
    conns = [await RawConnection.open(host, port) for _ in range(MEMBERS)]
    try:
        ids = []
        for conn in conns:
            first = await conn.request(JOIN, 5, client_id="race", **_join_fields(group_id, ""))
            ids.append(first.member_id)
        frames = [codec.encode_request(codec.new_request(JOIN, 5, **_join_fields(group_id, member_id)), 99, "race")
                  for member_id in ids]
        for i, (conn, frame) in enumerate(zip(conns, frames, strict=True)):
            if i and spacing_ms:
                _pause(spacing_ms / 1000)
            conn.writer.write(frame)  # the transport sends at once when its buffer is empty
        answers = [a for a in await _answers(conns) if a.error_code == 0]
        if not answers:
            return 0
        first_generation = min(a.generation_id for a in answers)
        return sum(1 for a in answers if a.generation_id == first_generation)
    finally:
        for conn in conns:
            await conn.close()


async def measure(host: str, port: int, prefix: str, spacing_ms: float, runs: int) -> RaceShares:
    sizes = []
    for i in range(runs):
        sizes.append(await run_once(host, port, f"{prefix}-{spacing_ms:g}-{i}", spacing_ms))
    return RaceShares(spacing_ms, tuple(sizes))
