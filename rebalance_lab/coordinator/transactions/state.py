"""Transaction metadata and its states, as Kafka's ``TransactionMetadata`` / ``TransactionState``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MaxValue


class TxnState(StrEnum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


COMPLETED = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

TopicPartition = tuple[str, int]


def epoch_exhausted(epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``: Short.MaxValue is kept for fencing."""
    return epoch >= MAX_EPOCH - 1


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    # The end under way while its markers are written (None: no transition pending)
    pending_commit: bool | None = None
    # The client's transaction version of the last transition (KIP-890 part 2: every end bumps the epoch)
    tv2: bool = False

    def sorted_partitions(self) -> list[TopicPartition]:
        return sorted(self.partitions)
