"""A light KIP-848 consumer for tests: ConsumerGroupHeartbeat over real TCP, one request at a time.

It behaves as a well-mannered ``group.protocol=consumer`` client that never processes records:
it joins with a client-generated member id (KIP-1082, v1), sends the partitions it owns on every
heartbeat (a full request is always valid), gives up revoked partitions at once (its next
heartbeat no longer lists them), and starts again from epoch 0 when fenced. No background task:
the test calls :meth:`LightConsumer.heartbeat` when it wants one, so on a manual clock the whole
history is deterministic. :attr:`LightConsumer.seen` keeps every answer, which is what a test
compares a recording (or its replay) against.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

HEARTBEAT = 68
VERSION = 1
FENCED = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})


@dataclass(frozen=True)
class Seen:
    """One answer as the client saw it: error, epoch and the assignment it then owned (topic id -> partitions)."""

    error: int
    epoch: int
    owned: dict[uuid.UUID, frozenset[int]]


@dataclass
class LightConsumer:
    bootstrap: str
    group_id: str
    topics: Sequence[str] = ()
    client_id: str = "light"
    instance_id: str | None = None
    regex: str | None = None
    rebalance_timeout_ms: int = 30_000
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    _reader: asyncio.StreamReader | None = None
    _writer: asyncio.StreamWriter | None = None
    _correlation: int = 0

    async def open(self) -> LightConsumer:
        host, port = self.bootstrap.split(",")[0].rsplit(":", 1)
        self._reader, self._writer = await asyncio.open_connection(host, int(port))
        return self

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
            self._writer = None

    # -- the protocol ------------------------------------------------------------------------------------------

    async def heartbeat(self) -> Any:
        """One heartbeat: a join at epoch 0 (subscription, rebalance timeout), else the epoch and what it owns."""
        joining = self.epoch == 0
        fields: dict[str, Any] = {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.epoch,
            "instance_id": self.instance_id, "topic_partitions": self._owned_field(),
        }
        if joining:
            fields.update(rebalance_timeout_ms=self.rebalance_timeout_ms,
                          subscribed_topic_names=None if self.regex else list(self.topics),
                          subscribed_topic_regex=self.regex)
        response = await self.request(HEARTBEAT, VERSION, **fields)
        self._apply(response)
        return response

    async def leave(self, epoch: int = -1) -> Any:
        """A leave heartbeat (-1; -2 is a static member's temporary leave)."""
        response = await self.request(HEARTBEAT, VERSION, group_id=self.group_id, member_id=self.member_id,
                                      member_epoch=epoch, instance_id=self.instance_id)
        self.epoch, self.owned = 0, {}
        return response

    def _owned_field(self) -> list[Any]:
        shape = codec.data_class(codec.request_type(HEARTBEAT), "TopicPartitions")
        return [shape(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(self.owned.items()) if ps]

    def _apply(self, response: Any) -> None:
        error = ErrorCode(response.error_code)
        if error in FENCED:
            self.epoch, self.owned = 0, {}
        elif error is ErrorCode.NONE:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.owned = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}
        self.seen.append(Seen(int(error), self.epoch, dict(self.owned)))

    async def request(self, api_key: int, version: int, **fields: Any) -> Any:
        assert self._reader is not None and self._writer is not None, "open() first"
        self._correlation += 1
        frame = codec.encode_request(codec.new_request(api_key, version, **fields), self._correlation, self.client_id)
        self._writer.write(frame)
        await self._writer.drain()
        (size,) = struct.unpack(">i", await asyncio.wait_for(self._reader.readexactly(4), 5))
        payload = await asyncio.wait_for(self._reader.readexactly(size), 5)
        return codec.decode_response(api_key, version, payload)

    # -- reading -------------------------------------------------------------------------------------------------

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}

    def at_epoch(self, epoch: int) -> dict[uuid.UUID, frozenset[int]] | None:
        """What this client held once reconciled at ``epoch``: its answers at that epoch only add partitions
        (the released ones arrive) until the next target takes some away while the epoch stays (revocation).
        None if it never was at that epoch."""
        held: dict[uuid.UUID, frozenset[int]] | None = None
        for s in self.seen:
            if s.epoch != epoch or s.error != 0:
                continue
            if held is not None and _flat(s.owned) < _flat(held):
                break  # a revocation towards the next epoch
            held = s.owned
        return held


def _flat(owned: dict[uuid.UUID, frozenset[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in owned.items() for p in ps}


async def round_of(members: Iterable[LightConsumer]) -> None:
    """One heartbeat from each member, in order."""
    for member in members:
        await member.heartbeat()


async def reconcile(members: Sequence[LightConsumer], rounds: int = 4) -> None:
    """Heartbeat rounds enough for any revoke-then-assign cycle (revoke, acknowledge, receive the released)."""
    for _ in range(rounds):
        await round_of(members)
