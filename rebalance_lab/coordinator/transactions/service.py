"""The edge of the transaction coordinator: markers into the partition logs and the group offsets, timers.

``TransactionMarkerChannelManager`` sends WriteTxnMarkers to each partition's leader; here the
markers are appended directly (replication is instant), after ``marker_delay_ms`` when a fault asks
for it. A marker for ``__consumer_offsets`` completes the producer's pending transactional offsets
(``GroupCoordinator.onTransactionCompleted``). Installed on first use, like the data plane.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rebalance_lab.coordinator.dataplane import dataplane, partition_log
from rebalance_lab.coordinator.transactions.batches import control_batch
from rebalance_lab.coordinator.transactions.coordinator import Completion, TransactionCoordinator

if TYPE_CHECKING:
    from rebalance_lab.coordinator.world import World

SERVICE_KEY = "transactions"
OFFSETS_TOPIC = "__consumer_offsets"
COORDINATOR_EPOCH = 0  # the transaction state partition's leader epoch: one leader, never moved


@dataclass(frozen=True)
class TxnEvent:
    """What the coordinator did, for recordings and narration."""

    kind: str  # "markers-written" | "timed-out"
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]


class TransactionService:
    def __init__(self, world: World) -> None:
        self.world = world
        self.coordinator = TransactionCoordinator(start_ms=world.now_ms())
        self.listeners: list[Callable[[TxnEvent], None]] = []

    def next_deadline(self) -> int | None:
        return self.coordinator.next_deadline()

    def fire_timers(self, now_ms: int) -> None:
        for txn_id in self.coordinator.fire_timers(now_ms):
            txn = self.coordinator.txns[txn_id]
            self._tell(TxnEvent("timed-out", txn_id, txn.producer_id, txn.producer_epoch, False,
                                tuple(txn.sorted_partitions())))
        self.flush(now_ms)

    def flush(self, now_ms: int) -> None:
        """Write the markers of every end that is due (all of them unless a fault delays markers)."""
        due = self.coordinator.due_completions(now_ms)
        for completion in due:
            self._write_markers(completion, now_ms)
            self.coordinator.markers_written(completion, now_ms)
            self._tell(TxnEvent("markers-written", completion.transactional_id, completion.producer_id,
                                completion.producer_epoch, completion.commit, completion.partitions))
        if self.coordinator.completions:
            self.world.wake()  # a delayed marker: the shell re-arms its timer

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
