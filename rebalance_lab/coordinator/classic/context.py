"""Shared state of one coordinator: config, flavor, groups and the keyed timers.

Timers follow Java ``GroupMetadataManager``'s keys (STYLE.md principle 3): one
heartbeat timer per member id (also used for a KIP-394 pending member), one join
timer per group (the initial delay and the rebalance timeout share it, so completing
the join cancels either), and one pending-sync timer per group.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from rebalance_lab.config import Flavor, GroupConfig
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.timers import Due, TimerQueue


class TimerKind(Enum):
    HEARTBEAT = "heartbeat"
    JOIN = "join"
    SYNC = "sync"


TimerKey = tuple[TimerKind, str, str]  # (kind, group id, member id or "")


@dataclass(frozen=True)
class InitialDelay:
    """The initial-rebalance-delay timer (§6): the delay just used and the time left after it."""

    delay_ms: int
    remaining_ms: int


@dataclass(frozen=True)
class RebalanceTimeout:
    """The join timer of a non-initial rebalance (``completeClassicGroupJoin`` on expiry)."""


@dataclass(frozen=True)
class PendingSync:
    generation_id: int


@dataclass(frozen=True)
class MemberTimeout:
    """A heartbeat/session timer, or a pending member's join timer (same key)."""


TimerPayload = InitialDelay | RebalanceTimeout | PendingSync | MemberTimeout


@dataclass(frozen=True)
class _Stamped:
    seq: int
    payload: TimerPayload


class GroupTimers:
    """Keyed timers; one cancelled or replaced by a timer firing at the same instant never runs."""

    def __init__(self) -> None:
        self._queue: TimerQueue[TimerKey, _Stamped] = TimerQueue()
        self._live: dict[TimerKey, _Stamped] = {}
        self._seq = itertools.count()

    def schedule(self, key: TimerKey, at_ms: int, payload: TimerPayload) -> None:
        stamped = _Stamped(next(self._seq), payload)
        self._live[key] = stamped
        self._queue.schedule(key, at_ms, stamped)

    def cancel(self, key: TimerKey) -> None:
        self._live.pop(key, None)
        self._queue.cancel(key)

    def payload(self, key: TimerKey) -> TimerPayload | None:
        stamped = self._live.get(key)
        return None if stamped is None else stamped.payload

    def deadline(self, key: TimerKey) -> int | None:
        return self._queue.deadline(key)

    def next_deadline(self) -> int | None:
        return self._queue.next_deadline()

    def pop_next_due(self, now_ms: int) -> list[Due[TimerKey, _Stamped]]:
        """The timers sharing the earliest deadline, if it is <= now."""
        deadline = self._queue.next_deadline()
        if deadline is None or deadline > now_ms:
            return []
        return self._queue.pop_due(deadline)

    def claim(self, due: Due[TimerKey, _Stamped]) -> bool:
        """True if a popped timer is still the live one for its key (then it is consumed)."""
        if self._live.get(due.key) is not due.payload:
            return False
        del self._live[due.key]
        return True


def heartbeat_key(group_id: str, member_id: str) -> TimerKey:
    return (TimerKind.HEARTBEAT, group_id, member_id)


def join_key(group_id: str) -> TimerKey:
    return (TimerKind.JOIN, group_id, "")


def sync_key(group_id: str) -> TimerKey:
    return (TimerKind.SYNC, group_id, "")


@dataclass
class Core:
    config: GroupConfig
    flavor: Flavor
    new_uuid: Callable[[], str]
    groups: dict[str, Group]
    timers: GroupTimers

    @property
    def java(self) -> bool:
        """True for the Java coordinator (kafka-4), the normative model."""
        return self.flavor is Flavor.KAFKA_4
