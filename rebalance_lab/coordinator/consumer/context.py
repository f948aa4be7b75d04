"""What every consumer-group transition shares: configuration, groups, keyed timers, id source.

Timers are keyed as Kafka's ``CoordinatorTimer`` keys them: the session timeout and the
rebalance timeout per member, and one pending regex resolution per group (Kafka's executor
key ``<group>-regex``).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.coordinator.timers import TimerQueue

if TYPE_CHECKING:
    from rebalance_lab.coordinator.consumer.migration import ClassicPort

ClassicGroupKind = Callable[[str], str | None]  # group id -> "empty" | "non-empty" | None (no classic group)


class TimerKind(Enum):
    SESSION = "session"
    REBALANCE = "rebalance"
    REGEX = "regex"
    CLASSIC_JOIN = "classic-join"  # a classic-protocol member told to rejoin (spec §7.3, consumerGroupJoinKey)
    CLASSIC_SYNC = "classic-sync"  # a classic-protocol member between JoinGroup and SyncGroup (consumerGroupSyncKey)


TimerKey = tuple[TimerKind, str, str]  # (kind, group id, member id or "")


@dataclass(frozen=True)
class TimerPayload:
    epoch: int = 0  # REBALANCE: the member epoch it was scheduled at
    timeout_ms: int = 0  # REBALANCE: the member's rebalance timeout (for the fence message)
    regexes: frozenset[str] = frozenset()  # REGEX: the regexes to resolve
    member_id: str = ""  # REGEX: whose heartbeat asked
    may_describe: Callable[[str], bool] | None = None  # REGEX: that heartbeat's DESCRIBE on topics (authorizer)


@dataclass
class Core:
    config: ConsumerGroupConfig
    new_uuid: Callable[[], uuid.UUID]
    classic_group_kind: ClassicGroupKind
    groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    timers: TimerQueue[TimerKey, TimerPayload] = field(default_factory=TimerQueue)
    classic: ClassicPort | None = None  # the classic coordinator, for online migration (spec §7)

    def new_member_id(self) -> str:
        """``Uuid.randomUuid().toString()``: 22 chars of URL-safe base64, never starting with '-'."""
        while True:
            value = self.new_uuid()
            text = base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
            if value.int != 0 and not text.startswith("-"):
                return text

    def default_assignor(self) -> str:
        return self.config.assignors[0]

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        """``cancelTimers``: the session and the rebalance timeout (and the classic join/sync ones, spec §7)."""
        self.timers.cancel((TimerKind.SESSION, group_id, member_id))
        self.timers.cancel((TimerKind.REBALANCE, group_id, member_id))
        self.timers.cancel((TimerKind.CLASSIC_JOIN, group_id, member_id))
        self.timers.cancel((TimerKind.CLASSIC_SYNC, group_id, member_id))


@dataclass
class Pending:
    """One operation's records and timer changes, kept until it succeeds (an error changes nothing)."""

    now_ms: int
    records: list[GroupRecord] = field(default_factory=list)
    timers: list[Callable[[], None]] = field(default_factory=list)

    def record(self, record: GroupRecord) -> None:
        self.records.append(record)
