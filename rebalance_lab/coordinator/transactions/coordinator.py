"""The transaction coordinator, sans-I/O: Kafka's ``TransactionCoordinator`` for transaction version 1.

Every operation takes ``now_ms`` and returns an error code (and ids); markers to write leave as
:class:`Completion` values in :attr:`TransactionCoordinator.completions`, which the service writes
into the partition logs and the group coordinator's pending offsets, then reports back with
:meth:`markers_written` (``TransactionMarkerChannelManager`` then ``prepareComplete``). Appends to
the transaction log are instant here, so no transition stays pending except while markers are
written (``marker_delay_ms``, a fault).

The checks, in Kafka's order (``handleInitProducerId``, ``handleAddPartitionsToTransaction``,
``endTransaction``, ``abortTimedOutTransactions`` and ``TransactionMetadata.prepare*``):
unknown transactional id or another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch ->
PRODUCER_FENCED (handlers turn it into INVALID_PRODUCER_EPOCH for old request versions); a transition
under way or Prepare* -> CONCURRENT_TRANSACTIONS; an end that does not fit the state ->
INVALID_TXN_STATE (a retried end of a completed transaction -> NONE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rebalance_lab.coordinator.transactions.state import (
    COMPLETED,
    NO_PRODUCER_EPOCH,
    PREPARING,
    TopicPartition,
    TxnMetadata,
    TxnState,
    epoch_exhausted,
)
from rebalance_lab.protocol.errors import ErrorCode

MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
ABORT_INTERVAL_MS = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms


@dataclass(frozen=True)
class Completion:
    """A transaction's end whose markers must be written into its partitions."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]
    due_ms: int


@dataclass(frozen=True)
class EndResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class InitResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(self, max_timeout_ms: int = MAX_TIMEOUT_MS, abort_interval_ms: int = ABORT_INTERVAL_MS,
                 start_ms: int = 0) -> None:
        self.max_timeout_ms = max_timeout_ms
        self.abort_interval_ms = abort_interval_ms
        self.marker_delay_ms = 0  # a fault: how long the markers of an end take to be written
        self.txns: dict[str, TxnMetadata] = {}
        self.completions: list[Completion] = []
        self._by_producer: dict[int, TxnMetadata] = {}
        self._next_abort_check = start_ms + abort_interval_ms

    # -- InitProducerId ---------------------------------------------------------------

    def init_producer_id(self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None, now_ms: int,
                         allocate: Callable[[], int]) -> InitResult:
        """``allocate`` hands out a new producer id (the coordinator's broker's block)."""
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        txn = self.txns.get(txn_id)
        if txn is None:
            txn = self.txns[txn_id] = TxnMetadata(txn_id, allocate(), timeout_ms, last_update_ms=now_ms)
            self._by_producer[txn.producer_id] = txn
        if txn.pending_commit is not None:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _valid_producer_id(txn, *expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state in PREPARING:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state == TxnState.ONGOING:
            # Fence the current producer: abort with a bumped epoch that is never returned; the client retries
            self._fence_and_abort(txn, now_ms)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if epoch_exhausted(txn.producer_epoch) and (expected is None or expected[1] == txn.producer_epoch):
            last = txn.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
            txn.last_producer_id, txn.producer_id = txn.producer_id, allocate()
            self._by_producer[txn.producer_id] = txn
            return self._reset(txn, 0, last, timeout_ms, now_ms)
        bumped = _bumped_epochs(txn, None if expected is None else expected[1])
        if bumped is None:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        return self._reset(txn, *bumped, timeout_ms, now_ms)

    def _reset(self, txn: TxnMetadata, epoch: int, last_epoch: int, timeout_ms: int, now_ms: int) -> InitResult:
        txn.producer_epoch, txn.last_producer_epoch, txn.timeout_ms = epoch, last_epoch, timeout_ms
        txn.state, txn.partitions, txn.start_ms, txn.last_update_ms = TxnState.EMPTY, set(), -1, now_ms
        return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------

    def _check_producer(self, txn_id: str, producer_id: int, epoch: int) -> tuple[TxnMetadata | None, ErrorCode]:
        txn = self.txns.get(txn_id)
        if txn is None or txn.producer_id != producer_id:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return txn, ErrorCode.NONE

    def add_partitions(self, txn_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition],
                       now_ms: int, tv2: bool = False) -> ErrorCode:
        """``tv2``: an implicit add of transaction version 2 (Produce v12+, TxnOffsetCommit v5+), which makes the
        transaction a version-2 one (its end bumps the epoch)."""
        txn, error = self._check_producer(txn_id, producer_id, epoch)
        if txn is None:
            return error
        if txn.pending_commit is not None or txn.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if txn.state == TxnState.ONGOING and partitions <= txn.partitions:
            return ErrorCode.NONE
        if txn.state in COMPLETED:
            txn.start_ms = now_ms
        txn.tv2 = tv2
        txn.partitions |= partitions
        txn.state, txn.last_update_ms = TxnState.ONGOING, now_ms
        return ErrorCode.NONE

    def verify_partitions(self, txn_id: str, producer_id: int, epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """``handleVerifyPartitionsInTransaction`` (AddPartitionsToTxn v4+ with VerifyOnly)."""
        txn, error = self._check_producer(txn_id, producer_id, epoch)
        if txn is not None and txn.state in PREPARING:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if txn is None or error is not ErrorCode.NONE:
            return {tp: error for tp in partitions}
        return {tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in partitions}

    def producing_error(self, producer_id: int, epoch: int, partition: TopicPartition, now_ms: int,
                        tv2: bool = False) -> ErrorCode:
        """KIP-890 part 1: a transactional batch opening a transaction in a partition must belong to a
        transaction that added the partition (the real 4.4.0 broker answers INVALID_TXN_STATE, 'Partition was
        not added to the transaction'; an epoch older than the coordinator's, INVALID_PRODUCER_EPOCH)."""
        txn = self._by_producer.get(producer_id)
        if txn is not None and epoch < txn.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if tv2 and txn is not None:  # transaction version 2: the broker adds the partition itself
            error = self.add_partitions(txn.transactional_id, producer_id, epoch, {partition}, now_ms, tv2=True)
            return ErrorCode.INVALID_PRODUCER_EPOCH if error is ErrorCode.PRODUCER_FENCED else error
        if txn is None or txn.state != TxnState.ONGOING or partition not in txn.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    # -- EndTxn ------------------------------------------------------------------------

    def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool, now_ms: int,
                tv2: bool = False) -> EndResult:
        """``endTransaction`` from a client; ``tv2`` for EndTxn v5+ (the answer carries the bumped epoch)."""
        txn = self.txns.get(txn_id)
        if txn is None or txn.producer_id != producer_id:
            return EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not _valid_end_epoch(txn, epoch):
            return EndResult(ErrorCode.PRODUCER_FENCED)
        if tv2 and txn.state in COMPLETED:
            return self._end_without_transaction(txn, epoch, commit, now_ms)
        if txn.tv2 and txn.state in COMPLETED and epoch == txn.producer_epoch:
            # version 2: an end at the bumped epoch is a new end with no transaction (the real 4.4.0 broker)
            return EndResult(ErrorCode.INVALID_TXN_STATE)
        error = self._end(txn, commit, now_ms, tv2)
        if error is not ErrorCode.NONE:
            return EndResult(error)
        return EndResult(error, txn.producer_id, txn.producer_epoch)

    def _end_without_transaction(self, txn: TxnMetadata, epoch: int, commit: bool, now_ms: int) -> EndResult:
        """EndTxn v5+ in Empty, CompleteCommit or CompleteAbort (Kafka 4.4.0 ``TransactionCoordinator.endTransaction``
        for transaction version 2): a retry at the previous epoch answers NONE for the end that completed and
        INVALID_TXN_STATE for the other; a commit at the current epoch INVALID_TXN_STATE; an abort at the current
        epoch aborts an empty transaction, bumping the epoch (clients send it to clear partitions a failed produce
        may have added: franz-go's ``EndTransaction``)."""
        if txn.tv2 and txn.producer_epoch == epoch + 1:
            done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            if txn.state != done:
                return EndResult(ErrorCode.INVALID_TXN_STATE)
            return EndResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)
        if commit:
            return EndResult(ErrorCode.INVALID_TXN_STATE)
        self._prepare(txn, False, now_ms, tv2=True)
        return EndResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    def _prepare(self, txn: TxnMetadata, commit: bool, now_ms: int, tv2: bool) -> None:
        if tv2:  # prepareAbortOrCommit of transaction version 2: every end bumps the epoch
            txn.last_producer_epoch, txn.producer_epoch = txn.producer_epoch, txn.producer_epoch + 1
        txn.tv2 = tv2
        txn.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        txn.pending_commit, txn.last_update_ms = commit, now_ms
        self.completions.append(Completion(txn.transactional_id, txn.producer_id, txn.producer_epoch, commit,
                                           tuple(txn.sorted_partitions()), now_ms + self.marker_delay_ms))

    def _end(self, txn: TxnMetadata, commit: bool, now_ms: int, tv2: bool = False) -> ErrorCode:
        state = txn.state
        if state == TxnState.ONGOING:
            self._prepare(txn, commit, now_ms, tv2)
            return ErrorCode.NONE
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        preparing = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if state == done:
            return ErrorCode.NONE  # a retry of an end that completed
        if state == preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    def _fence_and_abort(self, txn: TxnMetadata, now_ms: int) -> None:
        """``prepareFenceProducerEpoch`` then an abort that is not from the client."""
        txn.producer_epoch += 1
        txn.last_producer_epoch = NO_PRODUCER_EPOCH
        self._end(txn, False, now_ms)

    def due_completions(self, now_ms: int) -> list[Completion]:
        due = [c for c in self.completions if c.due_ms <= now_ms]
        self.completions = [c for c in self.completions if c.due_ms > now_ms]
        return due

    def markers_written(self, completion: Completion, now_ms: int) -> None:
        txn = self.txns.get(completion.transactional_id)
        if txn is None or txn.pending_commit is None:
            return
        txn.state = TxnState.COMPLETE_COMMIT if txn.pending_commit else TxnState.COMPLETE_ABORT
        txn.pending_commit, txn.partitions, txn.last_update_ms = None, set(), now_ms

    # -- timers ------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        deadlines = [c.due_ms for c in self.completions]
        if any(t.state == TxnState.ONGOING for t in self.txns.values()):
            deadlines.append(self._next_abort_check)
        return min(deadlines) if deadlines else None

    def fire_timers(self, now_ms: int) -> list[str]:
        """The periodic check of ``abortTimedOutTransactions``; the transactional ids it aborted."""
        if now_ms < self._next_abort_check:
            return []
        while self._next_abort_check <= now_ms:
            self._next_abort_check += self.abort_interval_ms
        aborted = []
        for txn in self.txns.values():
            timed_out = txn.state == TxnState.ONGOING and txn.start_ms + txn.timeout_ms < now_ms
            if timed_out and txn.pending_commit is None:
                self._fence_and_abort(txn, now_ms)
                aborted.append(txn.transactional_id)
        return aborted

    # -- reads ---------------------------------------------------------------------------

    def describe(self, txn_id: str) -> TxnMetadata | None:
        txn = self.txns.get(txn_id)
        return None if txn is None or txn.state == TxnState.DEAD else txn


def _valid_end_epoch(txn: TxnMetadata, epoch: int) -> bool:
    """``endTransaction``'s epoch check: strict equality for version 1; for a version-2 transaction a
    Prepare* state only accepts a retry of the end that bumped the epoch (``endTxnEpochBumped``), a
    Complete* state that retry or the current epoch."""
    if not txn.tv2 or txn.state in (TxnState.ONGOING, TxnState.EMPTY):
        return epoch == txn.producer_epoch
    retry = txn.producer_epoch == epoch + 1
    return retry or (txn.state in COMPLETED and epoch == txn.producer_epoch)


def _valid_producer_id(txn: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """``isValidProducerId`` of ``prepareInitProducerIdTransit`` (KIP-360)."""
    return (txn.producer_epoch == NO_PRODUCER_EPOCH or producer_id == txn.producer_id
            or (producer_id == txn.last_producer_id and epoch_exhausted(epoch)))


def _bumped_epochs(txn: TxnMetadata, expected_epoch: int | None) -> tuple[int, int] | None:
    """``prepareIncrementProducerEpoch``: (epoch, last epoch) after the bump, or None when fenced."""
    bumped = txn.producer_epoch + 1
    if expected_epoch is None:
        return bumped, NO_PRODUCER_EPOCH
    if txn.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == txn.producer_epoch:
        return bumped, txn.producer_epoch
    if expected_epoch == txn.last_producer_epoch:
        return txn.producer_epoch, txn.last_producer_epoch  # a retry of a bump that succeeded
    return None
