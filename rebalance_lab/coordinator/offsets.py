"""Committed offsets per group, and their retention (spec/coordinator.md §12).

Sans-I/O: every operation takes ``now_ms``. The group-side verdicts (generation,
member, state) come from the group coordinator's offsets gate; this module owns
the stored values, the per-partition rules and the expiration sweep of §12.4.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Generator, Iterable
from dataclasses import dataclass
from itertools import repeat

from rebalance_lab.config import GroupConfig
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.timers import TimerQueue

NO_EPOCH = -1
NO_OFFSET = -1


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1: none (OffsetCommit v6+ carries it)
    metadata: str  # a null metadata is stored as "" (OMM.commitOffset)
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None  # only from OffsetCommit v2-4 RetentionTimeMs != -1


@dataclass(frozen=True)
class CommitTimeExpiry:
    """How a KIP-848 consumer group's offsets expire (``ConsumerGroup.offsetExpirationCondition``, 4.4.0):
    by commit timestamp in every state, except the topics the group subscribes to, which never expire
    while it does (``OffsetMetadataManager.cleanupExpiredOffsets`` skips them)."""

    subscribed_topics: frozenset[str]


TopicPartitionKey = tuple[str, int]
GroupLookup = Callable[[str], GroupView | CommitTimeExpiry | None]
# Told of every stored change: (group, (topic, partition), the new value or None when removed).
OffsetListener = Callable[[str, TopicPartitionKey, CommittedOffset | None], None]
SubscribedTopics = Callable[[GroupView], frozenset[str] | None]


# Keys a prepared deletion works through per step (a set add or a dict lookup each: ~1-2 ms of work)
_DELETION_STEP = 5_000


class _GroupOffsets(dict[TopicPartitionKey, CommittedOffset]):
    """One group's offsets and a count of the writes to them: a deletion prepared in steps from one state of
    them is made at once only if no write came in between."""

    __slots__ = ("writes",)

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0


@dataclass
class PreparedDeletion:
    """An OffsetDelete's tombstones worked out in steps (:meth:`OffsetStore.prepare_deletion`): what the group's
    offsets become once ``keys`` are gone, from the state they were in when the preparation began."""

    group_id: str
    keys: list[TopicPartitionKey]
    source: _GroupOffsets | None  # the offsets it was prepared from
    writes: int  # their write count then
    kept: _GroupOffsets  # ``source`` without ``keys``, in ``source``'s order


class OffsetStore:
    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self._groups: dict[str, _GroupOffsets] = {}
        self._timers: TimerQueue[str, None] = TimerQueue()
        self.listener: OffsetListener | None = None  # the data directory's writer (serve --data-dir)

    # -- reads and writes -------------------------------------------------------------

    def _written(self, group_id: str) -> _GroupOffsets:
        offsets = self._groups.get(group_id)
        if offsets is None:
            offsets = self._groups[group_id] = _GroupOffsets()
        offsets.writes += 1
        return offsets

    def commit(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        self._written(group_id)[(topic, partition)] = value
        if self.listener is not None:
            self.listener(group_id, (topic, partition), value)

    def commit_all(self, group_id: str, values: dict[TopicPartitionKey, CommittedOffset]) -> None:
        """``commit`` of many partitions at once (one C-speed update: a 200,000-partition commit is stored
        atomically, as Kafka writes it in one batch, without holding the loop for a Python loop's time)."""
        self._written(group_id).update(values)
        if self.listener is not None:
            for key, value in values.items():
                self.listener(group_id, key, value)

    def fetch(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        offsets = self._groups.get(group_id)
        return None if offsets is None else offsets.get((topic, partition))

    def fetch_all(self, group_id: str) -> list[tuple[TopicPartitionKey, CommittedOffset]]:
        offsets = self._groups.get(group_id)
        return [] if offsets is None else list(offsets.items())

    def delete(self, group_id: str, topic: str, partition: int) -> bool:
        offsets = self._groups.get(group_id)
        if offsets is None or offsets.pop((topic, partition), None) is None:
            return False
        offsets.writes += 1
        self._removed(group_id, [(topic, partition)])
        if not offsets:
            del self._groups[group_id]
        return True

    def delete_all(self, group_id: str, keys: list[TopicPartitionKey]) -> None:
        """``delete`` of many partitions at once (OffsetDelete's tombstones are one batch in Kafka)."""
        offsets = self._groups.get(group_id)
        if offsets is None:
            return
        offsets.writes += 1
        if self.listener is None:  # pops at C speed: 200,000 keys in ~30-80 ms rather than ~100-300
            deque(map(offsets.pop, keys, repeat(None)), maxlen=0)
        else:
            self._removed(group_id, [key for key in keys if offsets.pop(key, None) is not None])
        if not offsets:
            del self._groups[group_id]

    def prepare_deletion(self, group_id: str, keys: list[TopicPartitionKey]
                         ) -> Generator[None, None, PreparedDeletion]:
        """``delete_all(group_id, keys)`` worked out in steps, for :meth:`delete_prepared` to make in one.

        OffsetMetadataManager.deleteOffsets writes an OffsetDelete's tombstones as one batch, so no reader sees
        half of them; popping 200,000 keys in one step held the loop ~50-100 ms. The group's offsets without
        ``keys`` are built here a few thousand keys a step, then put in place of the old ones at once.
        """
        source = self._groups.get(group_id)
        kept = _GroupOffsets()
        prepared = PreparedDeletion(group_id, keys, source, source.writes if source is not None else 0, kept)
        if source is None or self.listener is not None:  # nothing to delete, or a tombstone to write for each
            return prepared
        doomed: set[TopicPartitionKey] = set()
        for start in range(0, len(keys), _DELETION_STEP):
            yield
            doomed.update(keys[start:start + _DELETION_STEP])
        present = list(source)  # one C-speed copy of the keys (~2 ms for 200,000): the dict may change meanwhile
        for start in range(0, len(present), _DELETION_STEP):
            yield
            for key in present[start:start + _DELETION_STEP]:
                value = source.get(key)
                if value is not None and key not in doomed:
                    kept[key] = value
        return prepared

    def delete_prepared(self, prepared: PreparedDeletion, spared: Collection[TopicPartitionKey] = ()
                        ) -> _GroupOffsets | None:
        """Delete a prepared deletion's keys but ``spared`` in one step; returns the replaced offsets (to be freed
        a slice at a time by the caller), or None when the deletion had to be made key by key: with a listener
        (one tombstone each), when ``spared`` is not empty (keeping their place in the commit order, which
        OffsetFetch's HashMap order follows) or when the offsets were written since the preparation began."""
        source = self._groups.get(prepared.group_id)
        if self.listener is not None or spared or source is None or source is not prepared.source \
                or source.writes != prepared.writes:
            self.delete_all(prepared.group_id, [k for k in prepared.keys if k not in spared])
            return None
        if prepared.kept:
            prepared.kept.writes = source.writes + 1
            self._groups[prepared.group_id] = prepared.kept
        else:
            del self._groups[prepared.group_id]
        return source

    def delete_group(self, group_id: str) -> int:
        removed = self._groups.pop(group_id, None)
        if removed is None:
            return 0
        self._removed(group_id, list(removed))
        return len(removed)

    def _removed(self, group_id: str, keys: list[TopicPartitionKey]) -> None:
        if self.listener is not None:
            for key in keys:
                self.listener(group_id, key, None)

    def delete_topic(self, topic: str) -> None:
        """Offsets of a deleted topic go with it (``GroupCoordinator.onPartitionsDeleted``)."""
        for group_id in list(self._groups):
            offsets = self._groups[group_id]
            gone = [k for k in offsets if k[0] == topic]
            offsets.writes += len(gone)
            for key in gone:
                del offsets[key]
            self._removed(group_id, gone)
            if not offsets:
                del self._groups[group_id]

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._groups.get(group_id))

    def group_ids(self) -> list[str]:
        return list(self._groups)

    # -- retention (§12.4) --------------------------------------------------------------

    def start_sweeps(self, now_ms: int) -> None:
        self._timers.schedule("sweep", now_ms + self.config.offsets_retention_check_interval_ms, None)

    def next_deadline(self) -> int | None:
        return self._timers.next_deadline()

    def sweep_due(self, now_ms: int) -> bool:
        """True (and the next sweep scheduled) when the periodic sweep is due."""
        if not self._timers.pop_due(now_ms):
            return False
        self.start_sweeps(now_ms)
        return True

    def expire(self, now_ms: int, lookup: GroupLookup, subscribed: SubscribedTopics) -> list[str]:
        """Drop expired offsets; return the groups left with no offsets (candidates for deletion)."""
        emptied: list[str] = []
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group_id in list(self._groups):
            offsets = self._groups[group_id]
            gone = _expired(offsets.items(), lookup(group_id), now_ms, retention_ms, subscribed)
            offsets.writes += len(gone)
            for key in gone:
                del offsets[key]
            self._removed(group_id, gone)
            if not offsets:
                del self._groups[group_id]
                emptied.append(group_id)
        return emptied


def _expired(
    offsets: Iterable[tuple[TopicPartitionKey, CommittedOffset]],
    group: GroupView | CommitTimeExpiry | None,
    now_ms: int,
    retention_ms: int,
    subscribed: SubscribedTopics,
) -> list[TopicPartitionKey]:
    """``CG.offsetExpirationCondition``: which base time each offset's age is measured from."""
    topics: frozenset[str] | None = None
    base_state = 0
    use_commit_time = group is None or isinstance(group, CommitTimeExpiry) or group.protocol_type is None
    if isinstance(group, CommitTimeExpiry):
        topics = group.subscribed_topics
    elif group is not None and group.protocol_type is not None:
        if group.state == "Empty":
            base_state = group.state_timestamp_ms
        elif group.protocol_type == "consumer" and group.state == "Stable":
            topics = subscribed(group)
            if topics is None:
                return []
            use_commit_time = True
        else:
            return []  # other states: nothing expires
    expired = []
    for key, value in offsets:
        if value.expire_timestamp_ms is not None:
            if now_ms >= value.expire_timestamp_ms:
                expired.append(key)
            continue
        if topics is not None and key[0] in topics:
            continue  # a Stable consumer group keeps the offsets of topics it subscribes to
        base = value.commit_timestamp_ms if use_commit_time else base_state
        if now_ms - base >= retention_ms:
            expired.append(key)
    return expired


class PendingTxnOffsets:
    """Transactional offsets waiting for their transaction's end (``OffsetMetadataManager``'s
    ``pendingTransactionalOffsets``): invisible to OffsetFetch until the COMMIT marker reaches the
    group's offsets partition, then committed; dropped at ABORT."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, dict[TopicPartitionKey, CommittedOffset]]] = {}

    def add(self, producer_id: int, group_id: str, key: TopicPartitionKey, value: CommittedOffset) -> None:
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {})[key] = value

    def add_all(self, producer_id: int, group_id: str, values: dict[TopicPartitionKey, CommittedOffset]) -> None:
        """``add`` of many partitions in one C-speed update (TxnOffsetCommit's batch, issue 17 Fairness)."""
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(values)

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in groups.get(group_id, {}) for groups in self._by_producer.values())

    def pending_groups(self, producer_id: int) -> list[str]:
        return list(self._by_producer.get(producer_id, {}))

    def complete(self, producer_id: int, commit: bool, store: OffsetStore) -> None:
        for group_id, offsets in self._by_producer.pop(producer_id, {}).items():
            if commit:
                for (topic, partition), value in offsets.items():
                    store.commit(group_id, topic, partition, value)

