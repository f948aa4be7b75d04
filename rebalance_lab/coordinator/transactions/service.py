"""The edge of the transaction coordinator: markers into the partition logs and the group offsets, timers.

``TransactionMarkerChannelManager`` sends WriteTxnMarkers to each partition's leader; here the
markers are appended directly (replication is instant), after ``marker_delay_ms`` when a fault asks
for it. A marker for ``__consumer_offsets`` completes the producer's pending transactional offsets
(``GroupCoordinator.onTransactionCompleted``). Installed on first use, like the data plane.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rebalance_lab.coordinator.dataplane import dataplane, partition_log
from rebalance_lab.coordinator.transactions.batches import control_batch
from rebalance_lab.coordinator.transactions.coordinator import Completion, TransactionCoordinator
from rebalance_lab.coordinator.transactions.records import TxnEvent

if TYPE_CHECKING:
    from rebalance_lab.coordinator.world import World

SERVICE_KEY = "transactions"
OFFSETS_TOPIC = "__consumer_offsets"
COORDINATOR_EPOCH = 0  # the transaction state partition's leader epoch: one leader, never moved


class TransactionService:
    def __init__(self, world: World) -> None:
        self.world = world
        self.coordinator = TransactionCoordinator(start_ms=world.now_ms())
        self.listeners: list[Callable[[TxnEvent], None]] = []
        self._seen: dict[str, tuple[object, ...]] = {}  # the last state told per transactional id

    def next_deadline(self) -> int | None:
        return self.coordinator.next_deadline()

    def fire_timers(self, now_ms: int) -> None:
        for txn_id in self.coordinator.fire_timers(now_ms):
            self._tell(self._event("TXN_TIMED_OUT", txn_id, now_ms))
            self._note(txn_id, now_ms)
        self.flush(now_ms)

    def after(self, txn_id: str, now_ms: int) -> None:
        """Called by the handlers after each request: due markers are written, a state change is told."""
        self._note(txn_id, now_ms)
        self.flush(now_ms)

    def flush(self, now_ms: int) -> None:
        """Write the markers of every end that is due (all of them unless a fault delays markers)."""
        for completion in self.coordinator.due_completions(now_ms):
            self._write_markers(completion, now_ms)
            self.coordinator.markers_written(completion, now_ms)
            self._tell(TxnEvent("TXN_MARKERS", now_ms, completion.transactional_id, completion.producer_id,
                                completion.producer_epoch, "", completion.partitions, completion.commit))
            self._note(completion.transactional_id, now_ms)
        if self.coordinator.completions:
            self.world.wake()  # a delayed marker: the shell re-arms its timer

    def _event(self, kind: str, txn_id: str, now_ms: int) -> TxnEvent:
        txn = self.coordinator.txns[txn_id]
        return TxnEvent(kind, now_ms, txn_id, txn.producer_id, txn.producer_epoch, str(txn.state),
                        tuple(txn.sorted_partitions()))

    def _note(self, txn_id: str, now_ms: int) -> None:
        txn = self.coordinator.txns.get(txn_id)
        if txn is None or not self.listeners:
            return
        key = (txn.state, txn.producer_id, txn.producer_epoch, tuple(txn.sorted_partitions()))
        if self._seen.get(txn_id) != key:
            self._seen[txn_id] = key
            self._tell(self._event("TXN_STATE", txn_id, now_ms))

    def _write_markers(self, completion: Completion, now_ms: int) -> None:
        plane = dataplane(self.world)
        marker = control_batch(completion.producer_id, completion.producer_epoch, completion.commit,
                               COORDINATOR_EPOCH, now_ms)
        for topic, index in completion.partitions:
            if topic == OFFSETS_TOPIC:
                self._complete_offsets(completion)
                continue
            info = self.world.cluster.topics.get(topic)
            if info is None or not 0 <= index < len(info.partitions):
                continue  # deleted meanwhile: Kafka's marker gets UNKNOWN_TOPIC_OR_PARTITION and is dropped
            partition_log(self.world, info, info.partitions[index]).append_marker(marker)
            plane.logs.appended((info.topic_id, index))

    def _complete_offsets(self, completion: Completion) -> None:
        offsets = self.world.services.get("offsets")
        if offsets is not None:
            offsets.pending.complete(completion.producer_id, completion.commit, offsets.store)

    def _tell(self, event: TxnEvent) -> None:
        for listener in self.listeners:
            listener(event)


def transactions_of(world: World) -> TransactionService:
    found = world.services.get(SERVICE_KEY)
    if isinstance(found, TransactionService):
        return found
    service = TransactionService(world)
    world.services[SERVICE_KEY] = service
    world.register_timed(service)
    return service


def abort_orphaned_transactions(world: World) -> int:
    """After a data directory is loaded: abort every transaction still open in a partition log.

    The coordinator's state is not stored, and the emulator writes an end's markers before answering EndTxn,
    so an open transaction was never committed to its producer; Kafka would abort it at its timeout. Without
    this its first offset would hold the last stable offset back for ever. Returns the markers written."""
    plane = dataplane(world)
    written = 0
    for info in world.cluster.topics.values():
        for partition in info.partitions:
            log = plane.logs.existing(info.topic_id, partition.partition)
            if log is None:
                continue
            for producer_id, entry in list(log.producer_state.producers.items()):
                if entry.open_txn_first_offset is None:
                    continue
                log.append_marker(control_batch(producer_id, entry.epoch, False, COORDINATOR_EPOCH, world.now_ms()))
                plane.logs.appended((info.topic_id, partition.partition))
                written += 1
    return written

