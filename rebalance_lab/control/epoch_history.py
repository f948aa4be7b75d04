"""The history of a KIP-848 consumer group, one entry per group epoch, from the coordinator's records.

An entry starts at the epoch's bump (``GroupEpochBumped``: why, and the member that caused it) and
gets the target assignment computed for it (``TargetAssignmentComputed``; a record names only the
members whose target changed, so the full target is kept merged here) and the time the last
member reported ``STABLE`` at it (``stable_ms``, null while some member is still reconciling).
Entries live in a :class:`BoundedHistory` (shared with the classic generations when the toolkit
installs both), so only the newest are kept; the per-member state kept here is that of live members.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.control.bounded_history import BoundedHistory, Entry
from rebalance_lab.coordinator.consumer import migration
from rebalance_lab.coordinator.consumer import records as c
from rebalance_lab.coordinator.records import GroupRecord


def _is_epoch(entry: Entry) -> bool:
    return entry.get("type") == "consumer"


def _has_target(entry: Entry) -> bool:
    return _is_epoch(entry) and entry["target"] is not None


class EpochHistory:
    def __init__(self, store: BoundedHistory | None = None) -> None:
        self.store = store or BoundedHistory()
        self._targets: dict[str, dict[str, list[dict[str, Any]]]] = {}  # group -> member -> target
        self._stable: dict[str, dict[str, int]] = {}  # group -> member -> the epoch it is STABLE at (-1: not)

    def of(self, group_id: str) -> list[Entry]:
        return [dict(e) for e in self.store.entries(group_id) if _is_epoch(e)]

    def on_record(self, rec: GroupRecord) -> None:
        if isinstance(rec, c.GroupEpochBumped):
            self.store.append(rec.group_id, {
                "type": "consumer", "epoch": rec.epoch, "started_ms": rec.ts_ms, "reason": rec.reason,
                "member_id": rec.member_id, "assignor": None, "target": None, "stable_ms": None,
            })
        elif isinstance(rec, c.TargetAssignmentComputed):
            self._target(rec)
        elif isinstance(rec, c.MemberAssignmentChanged):
            stable = self._stable.setdefault(rec.group_id, {})
            stable[rec.member_id] = rec.epoch if rec.state == "STABLE" else -1
            self._maybe_stable(rec.group_id, rec.ts_ms)
        elif isinstance(rec, c.MemberLeft | c.MemberFenced) and not getattr(rec, "temporary", False):
            self._forget_member(rec.group_id, rec.member_id)
        elif isinstance(rec, c.StaticMemberReplaced):
            self._rename(rec.group_id, rec.old_member_id, rec.member.member_id)
        elif isinstance(rec, c.GroupDeleted | migration.GroupDowngraded):  # no consumer group of that id any more
            self._targets.pop(rec.group_id, None)
            self._stable.pop(rec.group_id, None)

    def _forget_member(self, group_id: str, member_id: str) -> None:
        """A member gone for good: drop its state, and its group's maps once empty (a churn of group ids)."""
        for by_group in (self._targets, self._stable):
            members = by_group.get(group_id)
            if members is not None:
                members.pop(member_id, None)
                if not members:
                    del by_group[group_id]

    def _target(self, rec: c.TargetAssignmentComputed) -> None:
        targets = self._targets.setdefault(rec.group_id, {})
        if rec.assignor is None:
            targets.clear()
        for member_id, partitions in rec.targets.items():
            targets[member_id] = c.tp_rows(partitions, rec.topic_names)
        entry = self._entry(rec.group_id, rec.epoch)
        if entry is not None:
            entry["assignor"] = rec.assignor
            entry["target"] = {m: list(t) for m, t in targets.items()}
            self._maybe_stable(rec.group_id, rec.ts_ms)

    def _maybe_stable(self, group_id: str, ts_ms: int) -> None:
        """The latest epoch with a target is stable once every member is STABLE at it."""
        last = self.store.last(group_id, _has_target)
        if last is None or last["stable_ms"] is not None:
            return
        stable = self._stable.get(group_id, {})
        if all(stable.get(m) == last["epoch"] for m in last["target"]):
            last["stable_ms"] = ts_ms

    def _entry(self, group_id: str, epoch: int) -> Entry | None:
        return self.store.last(group_id, lambda e: _is_epoch(e) and e["epoch"] == epoch)

    def _rename(self, group_id: str, old: str, new: str) -> None:
        targets, stable = self._targets.get(group_id, {}), self._stable.get(group_id, {})
        if old in targets:
            targets[new] = targets.pop(old)
        if old in stable:
            stable[new] = stable.pop(old)
