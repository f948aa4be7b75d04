"""A history store that forgets its oldest entries: at most N per group and M in all, with what it dropped counted.

The toolkit's generation history was a list per group that grew with every rebalance (issue 17, defect 6:
+452 MiB in 120 s of churn). Entries are kept in arrival order per group and named in one global queue; a
new entry past either cap drops the oldest one (of its group, or of any group). A group whose every entry
was dropped is forgotten and its count moves to ``dropped_of_forgotten_groups``, so even a stream of new
group ids stays bounded. Amortised time per entry is O(1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

Entry = dict[str, Any]


class BoundedHistory:
    def __init__(self, per_group: int = 1_000, total: int = 10_000) -> None:
        if per_group < 0 or total < 0:
            raise ValueError(f"history limits cannot be negative (per group {per_group}, total {total})")
        self.per_group = per_group
        self.total = total
        self._groups: dict[str, deque[tuple[int, Entry]]] = {}
        # (group, seq) of every kept entry, oldest first, and of some its group dropped since (at most 2 x total)
        self._order: deque[tuple[str, int]] = deque()
        self._live = 0  # entries kept
        self._dropped: dict[str, int] = {}  # only for groups that still have entries
        self._dropped_forgotten = 0
        self._seq = 0

    @property
    def enabled(self) -> bool:
        return self.per_group > 0 and self.total > 0

    def append(self, group_id: str, entry: Entry) -> None:
        if not self.enabled:
            return
        self._seq += 1
        entries = self._groups.setdefault(group_id, deque())
        entries.append((self._seq, entry))
        self._order.append((group_id, self._seq))
        self._live += 1
        if len(entries) > self.per_group:
            entries.popleft()
            self._count_dropped(group_id)
        while self._live > self.total:
            self._evict_oldest()
        if len(self._order) > 2 * self.total:
            self._compact()

    def _is_kept(self, group_id: str, seq: int) -> bool:
        """A group drops only its oldest entries, so an entry is kept while its seq is not below the group's first."""
        entries = self._groups.get(group_id)
        return entries is not None and bool(entries) and entries[0][0] <= seq

    def _evict_oldest(self) -> None:
        """Drop the oldest kept entry of any group (the global queue's first name still kept)."""
        while True:
            group_id, seq = self._order.popleft()
            if self._is_kept(group_id, seq):
                break
        entries = self._groups[group_id]
        entries.popleft()
        self._count_dropped(group_id)
        if not entries:  # forget the group, so a stream of new group ids stays bounded too
            del self._groups[group_id]
            self._dropped_forgotten += self._dropped.pop(group_id)

    def _compact(self) -> None:
        """Forget the names of entries their group already dropped (amortised: at least half the queue goes)."""
        self._order = deque(name for name in self._order if self._is_kept(*name))

    def _count_dropped(self, group_id: str) -> None:
        self._live -= 1
        self._dropped[group_id] = self._dropped.get(group_id, 0) + 1

    def entries(self, group_id: str) -> list[Entry]:
        """The kept entries of a group, oldest first (the stored dicts themselves: copy before handing out)."""
        return [entry for _, entry in self._groups.get(group_id, ())]

    def last(self, group_id: str, match: Callable[[Entry], bool]) -> Entry | None:
        """The newest kept entry of a group that matches."""
        return next((entry for _, entry in reversed(self._groups.get(group_id, ())) if match(entry)), None)

    def dropped(self, group_id: str) -> int:
        return self._dropped.get(group_id, 0)

    def summary(self) -> dict[str, Any]:
        """The caps, what is kept, and what was dropped (per group still known, and in all)."""
        dropped = dict(sorted(self._dropped.items()))
        return {
            "limit_per_group": self.per_group, "limit_total": self.total,
            "retained": self._live, "groups": len(self._groups),
            "dropped_total": sum(dropped.values()) + self._dropped_forgotten,
            "dropped_by_group": dropped, "dropped_of_forgotten_groups": self._dropped_forgotten,
        }
