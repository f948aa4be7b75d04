"""Committed offsets and group metadata on disk: ``__consumer_offsets-0/``, records of our own format.

Like Kafka's ``__consumer_offsets`` (key/value records, a null value a tombstone) and written at the
same moments, before the request that caused them is answered:

* ``{"o": [group, topic, partition, offset, leader epoch, metadata, commit ms, expire ms]}`` for a
  commit, ``{"o-": [group, topic, partition]}`` when an offset goes (delete, expiry, topic deletion);
* ``{"g": GroupView}`` a classic group's metadata record, written when a generation's assignment is
  stored (Stable) or the group becomes Empty, ``{"g-": group}`` its tombstone;
* ``{"c": record}`` each KIP-848 consumer group record (Kafka's consumer group records are what
  :mod:`rebalance_lab.coordinator.consumer.apply` folds, and are also its persistence).

A KIP-848 group is kept here folded (the same fold as the coordinator's), not as its history: a compaction
writes each group as its snapshot (:mod:`rebalance_lab.coordinator.consumer.snapshot`, the latest value of
each of Kafka's record keys), so memory and the compacted log grow with the live state, not with the churn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebalance_lab.coordinator.classic.restore import persisted
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.consumer.apply import apply
from rebalance_lab.coordinator.consumer.migration import GroupDowngraded
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.coordinator.consumer.records import ConsumerRecord, GroupDeleted
from rebalance_lab.coordinator.consumer.snapshot import snapshot
from rebalance_lab.coordinator.group_service import GroupService
from rebalance_lab.coordinator.offsets import CommittedOffset, OffsetStore, TopicPartitionKey
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.storage import values
from rebalance_lab.storage.record_log import RecordLog
from rebalance_lab.storage.segments import FlushPolicy, StorageError

DIRECTORY = "__consumer_offsets-0"
OffsetKey = tuple[str, str, int]
# The log is rewritten as its live state once it has grown by this much and by more than that state's size.
COMPACTION_BYTES = 64 * 1024 * 1024
ClassicLookup = Callable[[str], GroupView | None]  # the classic coordinator's group of an id


@dataclass
class GroupState:
    """What the log holds, folded: the live offsets, classic groups and consumer groups."""

    offsets: dict[OffsetKey, CommittedOffset] = field(default_factory=dict)
    classic: dict[str, GroupView] = field(default_factory=dict)
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)

    @property
    def consumer(self) -> dict[str, list[ConsumerRecord]]:
        """Each consumer group as its snapshot: the records that rebuild it, what a compaction writes."""
        return {group_id: snapshot(group) for group_id, group in self.consumer_groups.items()}

    def replay(self, record: dict[str, Any]) -> None:
        if "o" in record:
            g, t, p, offset, epoch, metadata, commit_ms, expire_ms = record["o"]
            self.offsets[(g, t, p)] = CommittedOffset(offset, epoch, metadata, commit_ms, expire_ms)
        elif "o-" in record:
            self.offsets.pop(tuple(record["o-"]), None)
        elif "g" in record:
            view = values.decode(record["g"])
            if not isinstance(view, GroupView):
                raise StorageError(f"{DIRECTORY}: a group record that is not a classic group")
            self.classic[view.group_id] = view
        elif "g-" in record:
            self.classic.pop(record["g-"], None)
        elif "c" in record:
            self.consumer_record(values.decode(record["c"]))
        else:
            raise StorageError(f"{DIRECTORY}: unknown record {str(record)[:200]}")

    def consumer_record(self, record: object) -> None:
        if not isinstance(record, ConsumerRecord):
            raise StorageError(f"{DIRECTORY}: a consumer group record of type {type(record).__name__}")
        if isinstance(record, GroupDeleted | GroupDowngraded):
            self.consumer_groups.pop(record.group_id, None)  # the group's records are all tombstoned
            return
        group = self.consumer_groups.get(record.group_id)
        if group is None:
            group = self.consumer_groups[record.group_id] = ConsumerGroup(record.group_id)
        apply(group, record)

    def records(self) -> list[dict[str, Any]]:
        """The live state as records (what compaction keeps)."""
        out: list[dict[str, Any]] = [_offset_record(k, v) for k, v in self.offsets.items()]
        out += [{"g": values.encode(v)} for v in self.classic.values()]
        out += [{"c": values.encode(r)} for rs in self.consumer.values() for r in rs]
        return out


def _offset_record(key: OffsetKey, v: CommittedOffset) -> dict[str, Any]:
    return {"o": [*key, v.offset, v.leader_epoch, v.metadata, v.commit_timestamp_ms, v.expire_timestamp_ms]}


class GroupStore:
    def __init__(self, root: Path, policy: FlushPolicy, compaction_bytes: int = COMPACTION_BYTES) -> None:
        self.log = RecordLog(root / DIRECTORY, policy)
        self._state = GroupState()  # what the log holds, kept up to date: what a compaction writes
        self.compaction_bytes = compaction_bytes

    @property
    def state(self) -> GroupState:
        """What the log holds, folded, kept up to date while serving (what the next compaction writes)."""
        return self._state

    def read(self) -> GroupState:
        """The log folded into the live state; the log is then rewritten as just that state."""
        state = GroupState()
        for record in self.log.load():
            state.replay(record)
        self.log.compact(state.records())
        self._state = state
        return state

    def load(self, now_ms: int, groups: GroupService, offsets: OffsetStore) -> GroupState:
        """Read the log into the coordinators and the offset store (before anything is written)."""
        state = self.read()
        groups.consumer.load(now_ms, [r for rs in state.consumer.values() for r in rs])
        for view in state.classic.values():
            groups.apply(groups.coordinator.load_group(now_ms, view))
        for (g, t, p), value in state.offsets.items():
            offsets.commit(g, t, p, value)
        return state

    # -- while serving --------------------------------------------------------------------------------

    def offset_changed(self, group_id: str, key: TopicPartitionKey, value: CommittedOffset | None) -> None:
        full = (group_id, *key)
        if value is None:
            self._state.offsets.pop(full, None)
            self._append({"o-": list(full)})
        else:
            self._state.offsets[full] = value
            self._append(_offset_record(full, value))

    def group_record(self, classic_group: ClassicLookup, record: GroupRecord) -> None:
        """After each group record: a consumer record is written as it is; a classic group's metadata record
        is written when what Kafka stores of it changed."""
        classic = self._state.classic
        if isinstance(record, ConsumerRecord):
            self._state.consumer_record(record)
            self._append({"c": values.encode(record)})
            if record.group_id not in classic:
                return  # else an online upgrade may just have removed the classic group
        view = classic_group(record.group_id)
        if view is None:
            if classic.pop(record.group_id, None) is not None:
                self._append({"g-": record.group_id})
            return
        stored = persisted(view)
        if stored is not None and stored != classic.get(record.group_id):
            classic[record.group_id] = stored
            self._append({"g": values.encode(stored)})

    def _append(self, record: dict[str, Any]) -> None:
        """Write, then compact when the log has grown past its live state (as the log cleaner would)."""
        self.log.append(record)
        if self.log.bytes_since_compaction > max(self.compaction_bytes, self.log.compacted_bytes):
            self.log.compact(self._state.records())

    def close(self) -> None:
        self.log.close()
