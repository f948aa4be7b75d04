"""Wrong answers franz-go's kgo suite found in the emulator, pinned as unit tests (no I/O).

TestTxnEtl (kgo/txn_test.go) ends a transaction in which produces were attempted but none succeeded with an
EndTxn v5 abort "to clear any server-side partition registrations" (kgo/txn.go). Kafka 4.4.0's
``TransactionCoordinator.endTransaction`` for transaction version 2 (vineflower on kafka_2.13-4.4.0.jar)
answers an abort at the current epoch in Empty, CompleteCommit or CompleteAbort with a new abort of an empty
transaction that bumps the epoch; the emulator answered INVALID_TXN_STATE, and kgo failed the session.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.coordinator.transactions.coordinator import TransactionCoordinator
from rebalance_lab.coordinator.transactions.state import TxnState
from rebalance_lab.protocol.errors import ErrorCode as E
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker
from tests.transactions import scenario


def _initialized() -> TransactionCoordinator:
    tc = TransactionCoordinator(start_ms=0)
    ids = itertools.count(1000)
    assert tc.init_producer_id("t", 60_000, None, 0, lambda: next(ids)).error is E.NONE
    return tc


def _complete(tc: TransactionCoordinator, now: int) -> None:
    for completion in tc.due_completions(now):
        tc.markers_written(completion, now)


def test_a_version_2_abort_of_an_empty_transaction_bumps_the_epoch_and_completes() -> None:
    tc = _initialized()
    end = tc.end_txn("t", 1000, 0, False, 1, tv2=True)
    assert (end.error, end.producer_id, end.producer_epoch) == (E.NONE, 1000, 1)
    _complete(tc, 1)
    assert tc.txns["t"].state == TxnState.COMPLETE_ABORT
    assert tc.end_txn("t", 1000, 0, False, 2, tv2=True).producer_epoch == 1  # a retry: NONE, the same epoch
    again = tc.end_txn("t", 1000, 1, False, 3, tv2=True)  # the next empty abort, at the bumped epoch
    assert (again.error, again.producer_epoch) == (E.NONE, 2)


def test_a_version_2_commit_of_an_empty_transaction_is_still_an_invalid_state() -> None:
    tc = _initialized()
    assert tc.end_txn("t", 1000, 0, True, 1, tv2=True).error is E.INVALID_TXN_STATE
    assert tc.txns["t"].producer_epoch == 0


def test_a_version_2_abort_after_a_commit_aborts_anew_but_its_retry_is_an_invalid_state() -> None:
    tc = _initialized()
    assert tc.add_partitions("t", 1000, 0, {("a", 0)}, 1) is E.NONE
    assert tc.end_txn("t", 1000, 0, True, 2, tv2=True).producer_epoch == 1
    _complete(tc, 2)
    assert tc.end_txn("t", 1000, 0, False, 3, tv2=True).error is E.INVALID_TXN_STATE  # retry with the other result
    fresh = tc.end_txn("t", 1000, 1, False, 3, tv2=True)
    assert (fresh.error, fresh.producer_epoch) == (E.NONE, 2)


def test_a_version_1_abort_of_an_empty_transaction_stays_an_invalid_state() -> None:
    tc = _initialized()
    assert tc.end_txn("t", 1000, 0, False, 1).error is E.INVALID_TXN_STATE


async def _empty_aborts(host_port: str) -> scenario.Facts:
    """EndTxn v5 with no transaction, raw: what kgo's TestTxnEtl sends after produces that all failed."""
    host, port = host_port.rsplit(":", 1)
    c = await RawConnection.open(host, int(port))
    try:
        txn_id = "txe-" + uuid.uuid4().hex[:8]
        topic, facts = await scenario._setup(c, txn_id)
        t = scenario.Txn(c, topic, txn_id)
        for _ in range(100):  # a real broker answers COORDINATOR_LOAD_IN_PROGRESS etc. while it starts
            init = await t.init(version=5)
            if init[0] not in (14, 15, 16):
                break
            await asyncio.sleep(0.2)
        facts.append(("init", init))
        facts.append(("commit v5 of an empty transaction", await t.end_v5(True)))
        facts.append(("abort v5 of an empty transaction", await t.end_v5(False)))
        facts.append(("describe", await _completed(c, txn_id)))
        facts.append(("retried abort (old epoch)", await t.end_v5(False)))
        facts.append(("retried as a commit (old epoch)", await t.end_v5(True)))
        facts.append(("commit at the new epoch", await t.end_v5(True, t.epoch + 1)))
        facts.append(("abort at the new epoch", await t.end_v5(False, t.epoch + 1)))
        return facts
    finally:
        await c.close()


async def _completed(c: RawConnection, txn_id: str) -> tuple[int, str]:
    """The state once the end completed: a real broker answers EndTxn before it leaves PrepareAbort."""
    for _ in range(100):
        error, state = (await scenario.describe(c, txn_id))[:2]
        if not state.startswith("Prepare"):
            break
        await asyncio.sleep(0.05)
    return error, state


async def _empty_aborts_on_emulator() -> scenario.Facts:
    async with Emulator(initial_rebalance_delay_ms=0, port=0) as emu:
        return await _empty_aborts(emu.bootstrap_servers)


EMPTY_ABORT_FACTS = [  # established on the real 4.4.0 broker (the differential below)
    ("find-coordinator", 0),
    ("init", (0, 0)),
    ("commit v5 of an empty transaction", (48, "-1", -1)),
    ("abort v5 of an empty transaction", (0, "P", 1)),
    ("describe", (0, "CompleteAbort")),
    ("retried abort (old epoch)", (0, "P", 1)),
    ("retried as a commit (old epoch)", (48, "-1", -1)),
    ("commit at the new epoch", (48, "-1", -1)),
    ("abort at the new epoch", (0, "P", 2)),
]


def test_empty_aborts_of_transaction_version_2_answer_on_the_emulator_as_measured_on_4_4_0() -> None:
    assert asyncio.run(_empty_aborts_on_emulator()) == EMPTY_ABORT_FACTS


@pytest.mark.broker
def test_empty_aborts_of_transaction_version_2_answer_as_kafka_4_4_0_does(kafka_broker_4: KafkaBroker) -> None:
    assert asyncio.run(_empty_aborts(kafka_broker_4.bootstrap)) == asyncio.run(_empty_aborts_on_emulator())
