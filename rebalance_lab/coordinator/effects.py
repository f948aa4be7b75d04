"""What a transition returns: replies (to the caller and to parked requests) and records.

Shared by the classic group (``coordinator/classic``) and the KIP-848 consumer group
(``coordinator/consumer``): a reply is whatever result type the group's API returns.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.coordinator.records import GroupRecord


@dataclass
class Effects:
    """Replies in the order they were produced; records in the order the changes happened.

    A token appears at most once per reply *to the same parked request*; a token whose
    request was orphaned (a duplicate JoinGroup overwrote it, trap §16.10) never appears.
    """

    replies: list[tuple[Hashable, Any]] = field(default_factory=list)
    records: list[GroupRecord] = field(default_factory=list)

    def reply(self, token: Hashable, result: Any) -> None:
        self.replies.append((token, result))

    def record(self, record: GroupRecord) -> None:
        self.records.append(record)

    def extend(self, other: Effects) -> None:
        self.replies.extend(other.replies)
        self.records.extend(other.records)

    def reply_to(self, token: Hashable) -> Any | None:
        """The reply to one token, if this transition produced one (tests and the shell use it)."""
        return next((r for t, r in self.replies if t == token), None)
