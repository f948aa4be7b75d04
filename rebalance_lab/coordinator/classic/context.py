"""Shared state of one coordinator: config, flavor, groups and the keyed timers.

Timers follow Java ``GroupMetadataManager``'s keys (STYLE.md principle 3): one
heartbeat timer per member id (also used for a KIP-394 pending member), one join
timer per group (the initial delay and the rebalance timeout share it, so completing
the join cancels either), and one pending-sync timer per group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from rebalance_lab.config import Flavor, GroupConfig
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.timers import Due, TimerQueue


class TimerKind(StrEnum):
    """A StrEnum hashes a key's kind in C: every heartbeat hashes its timer key ~5 times (issue 22)."""

    HEARTBEAT = "heartbeat"
    JOIN = "join"
    SYNC = "sync"


TimerKey = tuple[TimerKind, str, str]  # (kind, group id, member id or "")


@dataclass(frozen=True)
class InitialDelay:
    """The initial-rebalance-delay timer (§6): the delay just used and the time left after it."""

    delay_ms: int
    remaining_ms: int
    # join_race "together": a zero delay that expired while members handed an id had not joined yet,
    # now waiting for them until the rest of the rebalance timeout (coordinator/join_race.py)
    waits_for_members: bool = False


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


class _Stamped:
    """A scheduled payload and its stamp (a plain slotted class: one is made per heartbeat)."""

    __slots__ = ("payload", "seq")

    def __init__(self, seq: int, payload: TimerPayload) -> None:
        self.seq, self.payload = seq, payload


class GroupTimers:
    """Keyed timers; one cancelled or replaced by a timer firing at the same instant never runs."""

    def __init__(self) -> None:
        self._queue: TimerQueue[TimerKey, _Stamped] = TimerQueue()
        self._live: dict[TimerKey, _Stamped] = {}
        self._next_seq = 0
        # The queue's own method, bound once: the group service and the shell ask after every request (issue 22)
        self.next_deadline: Callable[[], int | None] = self._queue.next_deadline

    def schedule(self, key: TimerKey, at_ms: int, payload: TimerPayload) -> None:
        stamped = _Stamped(self._next_seq, payload)
        self._next_seq += 1
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

    def mark(self) -> int:
        """A stamp below every timer scheduled from now on (see ``pop_next_due``'s ``scheduled_before``)."""
        return self._next_seq

    def pop_next_due(self, now_ms: int, scheduled_before: int | None = None) -> list[Due[TimerKey, _Stamped]]:
        """The timers sharing the earliest deadline, if it is <= now.

        With ``scheduled_before`` (a :meth:`mark`), timers scheduled since that mark stay queued: they
        run on a later call (join_race "sampled": a timer set while timers run waits for the next turn).
        """
        deadline = self._queue.next_deadline()
        if deadline is None or deadline > now_ms:
            return []
        due = self._queue.pop_due(deadline)
        if scheduled_before is None:
            return due
        for fresh in (d for d in due if d.payload.seq >= scheduled_before):
            self._queue.schedule(fresh.key, fresh.at, fresh.payload)  # still the live one: claim() accepts it
        return [d for d in due if d.payload.seq < scheduled_before]

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
