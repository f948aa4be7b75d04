"""The log a unit-test context keeps of what sans-I/O coordinators hand back in ``Effects``.

Both contexts that drive coordinators directly (tests/unit/coordinator/group_context.py for the classic group,
tests/unit/consumer_migration/context.py for the classic and consumer coordinators routed together) need the same
bookkeeping: a fresh token per request, each reply stored once under its token (a second answer to one token is a
coordinator bug, so it fails the test), and every record in the order the changes happened.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.records import GroupRecord

R = TypeVar("R")


class EffectsLog(Generic[R]):
    """Replies by token, records in order, and the manual clock they were produced at (ms, starting at 0)."""

    def __init__(self) -> None:
        self.now = 0
        self.replies: dict[Hashable, R] = {}
        self.records: list[GroupRecord] = []
        self._tokens = itertools.count(1)

    def next_token(self) -> int:
        return next(self._tokens)

    def _apply(self, fx: Effects) -> None:
        for token, result in fx.replies:
            assert token not in self.replies, f"token {token} answered twice"
            self.replies[token] = result
        self.records.extend(fx.records)

    def records_of(self, kind: type[GroupRecord]) -> list[Any]:
        """The records of one type (``Any``: a test reads the subclass's fields)."""
        return [r for r in self.records if isinstance(r, kind)]
