"""The transaction coordinator's state machine and the partition logs' producer state, without I/O."""

from __future__ import annotations

import itertools

from rebalance_lab.coordinator import record_batch
from rebalance_lab.coordinator.logs import PartitionLog
from rebalance_lab.coordinator.transactions.batches import control_batch, encode_batch
from rebalance_lab.coordinator.transactions.coordinator import TransactionCoordinator
from rebalance_lab.coordinator.transactions.state import TxnState
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

E = ErrorCode


def _coordinator() -> tuple[TransactionCoordinator, itertools.count[int]]:
    return TransactionCoordinator(start_ms=0), itertools.count(1000)


def _init(tc: TransactionCoordinator, ids: itertools.count[int], expected: tuple[int, int] | None = None,
          now: int = 0) -> tuple[ErrorCode, int, int]:
    result = tc.init_producer_id("t", 60_000, expected, now, lambda: next(ids))
    return result.error, result.producer_id, result.producer_epoch


def _complete(tc: TransactionCoordinator, now: int = 0) -> None:
    for completion in tc.due_completions(now):
        tc.markers_written(completion, now)


def test_a_new_transactional_id_gets_epoch_0_and_each_init_bumps_it() -> None:
    tc, ids = _coordinator()
    assert _init(tc, ids) == (E.NONE, 1000, 0)
    assert _init(tc, ids) == (E.NONE, 1000, 1)
    assert tc.txns["t"].last_producer_epoch == -1


def test_kip_360_bumps_with_the_expected_epoch_and_answers_a_retry_with_the_same_epoch() -> None:
    tc, ids = _coordinator()
    _init(tc, ids)
    assert _init(tc, ids, (1000, 0)) == (E.NONE, 1000, 1)
    assert _init(tc, ids, (1000, 0)) == (E.NONE, 1000, 1)  # a retry of the bump that succeeded
    assert _init(tc, ids, (1000, 7))[0] is E.PRODUCER_FENCED
    assert _init(tc, ids, (55, 0))[0] is E.PRODUCER_FENCED


def test_an_init_during_a_transaction_fences_it_aborts_it_and_the_retry_gets_a_twice_bumped_epoch() -> None:
    tc, ids = _coordinator()
    _init(tc, ids)
    assert tc.add_partitions("t", 1000, 0, {("a", 0)}, 5) is E.NONE
    assert _init(tc, ids)[0] is E.CONCURRENT_TRANSACTIONS
    [abort] = tc.completions
    assert (abort.commit, abort.producer_epoch, abort.partitions) == (False, 1, (("a", 0),))
    assert tc.end_txn("t", 1000, 0, True, 6).error is E.PRODUCER_FENCED
    _complete(tc)
    assert _init(tc, ids) == (E.NONE, 1000, 2)


def test_an_ongoing_transaction_past_its_timeout_is_aborted_at_the_next_periodic_check() -> None:
    tc, ids = _coordinator()
    tc.init_producer_id("t", 1_000, None, 0, lambda: next(ids))
    tc.add_partitions("t", 1000, 0, {("a", 0)}, 500)
    assert tc.next_deadline() == 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    assert tc.fire_timers(1_400) == []
    assert tc.fire_timers(10_000) == ["t"]
    _complete(tc, 10_000)
    assert tc.txns["t"].state is TxnState.COMPLETE_ABORT and tc.txns["t"].producer_epoch == 1
    assert tc.add_partitions("t", 1000, 0, {("a", 0)}, 10_001) is E.PRODUCER_FENCED


def test_ends_follow_the_states_and_a_delayed_marker_makes_the_next_request_wait() -> None:
    tc, ids = _coordinator()
    _init(tc, ids)
    assert tc.end_txn("t", 1000, 0, True, 1).error is E.INVALID_TXN_STATE  # Empty
    tc.marker_delay_ms = 500
    tc.add_partitions("t", 1000, 0, {("a", 0)}, 1)
    assert tc.end_txn("t", 1000, 0, True, 2).error is E.NONE
    assert tc.txns["t"].state is TxnState.PREPARE_COMMIT
    assert tc.add_partitions("t", 1000, 0, {("a", 1)}, 3) is E.CONCURRENT_TRANSACTIONS
    assert tc.due_completions(501) == [] and tc.next_deadline() == 502
    _complete(tc, 502)
    assert tc.end_txn("t", 1000, 0, True, 503).error is E.NONE  # a retried commit
    assert tc.end_txn("t", 1000, 0, False, 503).error is E.INVALID_TXN_STATE
    assert tc.end_txn("t", 77, 0, False, 503).error is E.INVALID_PRODUCER_ID_MAPPING


def test_a_transaction_timeout_over_the_maximum_is_refused() -> None:
    tc, ids = _coordinator()
    assert tc.init_producer_id("t", 900_001, None, 0, lambda: next(ids)).error is E.INVALID_TRANSACTION_TIMEOUT


def _append(log: PartitionLog, seq: int, n: int = 1, epoch: int = 0, pid: int = 7) -> int:
    batch = encode_batch([(None, b"x")] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         transactional=True)
    return log.append(batch, 0).base_offset


def _error(log: PartitionLog, seq: int, epoch: int = 0) -> ErrorCode:
    try:
        _append(log, seq, epoch=epoch)
    except KafkaError as exc:
        return exc.code
    return E.NONE


def test_sequences_are_checked_and_a_duplicate_gets_the_first_offset() -> None:
    log = PartitionLog()
    assert _append(log, 0, 2) == 0
    assert _append(log, 0, 2) == 0
    assert _error(log, 5) is E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _append(log, 2) == 2
    assert _error(log, 1, epoch=1) is E.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0


def test_the_lso_stops_at_an_open_transaction_and_an_abort_is_listed_for_read_committed() -> None:
    log = PartitionLog()
    _append(log, 0, 2)
    assert (log.high_watermark, log.last_stable_offset) == (2, 0)
    marker = log.append_marker(control_batch(7, 0, False, 0, 1))
    assert marker == 2 and log.last_stable_offset == 3
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_transactions(0, 3)] == [(7, 0, 2)]
    assert log.aborted_transactions(3, 3) == []
    assert record_batch.parse_header(log.batches[-1].data).is_control
    assert _error(log, 2) is E.NONE  # the producer continues its sequence after the marker
    restored = PartitionLog()
    for batch in log.batches:
        restored.restore(batch.data)
    assert restored.last_stable_offset == 3 and len(restored.aborted_transactions(0, 4)) == 1


def test_transaction_version_2_bumps_the_epoch_at_every_end_and_accepts_only_its_retry() -> None:
    tc, ids = _coordinator()
    _init(tc, ids)
    assert tc.producing_error(1000, 0, ("a", 0), 1, tv2=True) is E.NONE  # the partition is added implicitly
    assert tc.txns["t"].partitions == {("a", 0)}
    end = tc.end_txn("t", 1000, 0, True, 2, tv2=True)
    assert (end.error, end.producer_id, end.producer_epoch) == (E.NONE, 1000, 1)
    assert tc.end_txn("t", 1000, 0, True, 3, tv2=True).error is E.CONCURRENT_TRANSACTIONS  # markers pending
    _complete(tc, 3)
    assert tc.end_txn("t", 1000, 0, True, 4, tv2=True).producer_epoch == 1  # a retry: the bumped epoch again
    assert tc.end_txn("t", 1000, 1, True, 4, tv2=True).error is E.INVALID_TXN_STATE
    assert tc.end_txn("t", 1000, 5, True, 4, tv2=True).error is E.PRODUCER_FENCED
    assert tc.producing_error(1000, 0, ("a", 0), 5, tv2=True) is E.INVALID_PRODUCER_EPOCH
