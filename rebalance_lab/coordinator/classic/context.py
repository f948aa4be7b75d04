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


class GroupTimers:
    """Keyed timers; one cancelled or replaced by a timer firing at the same instant never runs.

    Each schedule gets a stamp (a number); the queue holds the stamp and this object the live stamp and payload of
    each key, so a popped timer is run only while its stamp is still the key's (no object is made per schedule:
    every member's session timer is scheduled twice a rebalance, issue 22).
    """

    def __init__(self) -> None:
        self._queue: TimerQueue[TimerKey, int] = TimerQueue()
        self._stamps: dict[TimerKey, int] = {}
        self._payloads: dict[TimerKey, TimerPayload] = {}
        self._next_seq = 0
        # The queue's own method, bound once: the group service and the shell ask after every request (issue 22)
        self.next_deadline: Callable[[], int | None] = self._queue.next_deadline
        self.deadline_bound: Callable[[], int | None] = self._queue.deadline_bound  # at most the earliest (timers.py)

    def schedule(self, key: TimerKey, at_ms: int, payload: TimerPayload) -> None:
        seq = self._next_seq
        self._next_seq = seq + 1
        self._stamps[key] = seq
        self._payloads[key] = payload
        self._queue.schedule(key, at_ms, seq)

    def cancel(self, key: TimerKey) -> None:
        if self._stamps.pop(key, None) is not None:
            del self._payloads[key]
        self._queue.cancel(key)

    def payload(self, key: TimerKey) -> TimerPayload | None:
        return self._payloads.get(key)

    def deadline(self, key: TimerKey) -> int | None:
        return self._queue.deadline(key)

    def mark(self) -> int:
        """A stamp below every timer scheduled from now on (see ``pop_next_due``'s ``scheduled_before``)."""
        return self._next_seq

    def pop_next_due(self, now_ms: int, scheduled_before: int | None = None) -> list[Due[TimerKey, int]]:
        """The timers sharing the earliest deadline, if it is <= now (each Due's payload is its stamp).

        With ``scheduled_before`` (a :meth:`mark`), timers scheduled since that mark stay queued: they
        run on a later call (join_race "sampled": a timer set while timers run waits for the next turn).
        """
        deadline = self._queue.next_deadline()
        if deadline is None or deadline > now_ms:
            return []
        due = self._queue.pop_due(deadline)
        if scheduled_before is None:
            return due
        for fresh in (d for d in due if d.payload >= scheduled_before):
            self._queue.schedule(fresh.key, fresh.at, fresh.payload)  # still the live one: claim() accepts it
        return [d for d in due if d.payload < scheduled_before]

    def claim(self, due: Due[TimerKey, int]) -> TimerPayload | None:
        """The payload of a popped timer if it is still the live one for its key (then it is consumed), else None."""
        if self._stamps.get(due.key) != due.payload:
            return None
        del self._stamps[due.key]
        return self._payloads.pop(due.key)


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
