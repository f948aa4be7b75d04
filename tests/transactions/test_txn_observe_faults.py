"""Transactions in recordings (``TXN_*`` rows) and narration, and the faults the toolkit injects into them."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from pathlib import Path

from rebalance_lab.api import Emulator
from tests.transactions import scenario
from tests.transactions.scenario import Txn


async def _begin(emu: Emulator) -> Txn:
    host, port = emu.bootstrap_servers.rsplit(":", 1)
    conn = await scenario.RawConnection.open(host, int(port))
    topic, _facts = await scenario._setup(conn, "tx-" + uuid.uuid4().hex[:6])
    txn = Txn(conn, topic, "t1")
    assert await txn.init() == (0, 0)
    assert await txn.add([(topic, 0)]) == [("T", 0, 0)]
    assert (await txn.produce(0, 2))[0] == 0
    return txn


async def _commit_one(emu: Emulator) -> None:
    txn = await _begin(emu)
    assert await txn.end(True) == 0
    await txn.c.close()


def test_a_transaction_is_recorded_and_narrated_step_by_step(tmp_path: Path) -> None:
    path, story = tmp_path / "rec.jsonl", io.StringIO()

    async def run() -> None:
        async with Emulator(initial_rebalance_delay_ms=0, port=0, record_path=str(path), explain=True,
                            explain_to=story) as emu:
            await _commit_one(emu)

    asyncio.run(run())
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    steps = [(r["event_type"], r.get("txn_state") or r.get("marker"))
             for r in rows if r["event_type"].startswith("TXN")]
    assert steps == [("TXN_STATE", "Empty"), ("TXN_STATE", "Ongoing"), ("TXN_STATE", "PrepareCommit"),
                     ("TXN_MARKERS", "COMMIT"), ("TXN_STATE", "CompleteCommit")]
    assert "t1: COMMIT markers written to " in story.getvalue()


def test_delayed_markers_keep_the_transaction_preparing_and_its_producer_waiting() -> None:
    async def run() -> None:
        async with Emulator(initial_rebalance_delay_ms=0, port=0, manual_clock=True) as emu:
            emu.delay_transaction_markers(30_000)
            txn = await _begin(emu)
            assert await txn.end(True) == 0
            assert await scenario.list_offsets(txn.c, txn.topic, 1) == 0  # no marker yet: LSO held back
            assert await txn.add([(txn.topic, 0)]) == [("T", 0, 51)]  # CONCURRENT_TRANSACTIONS
            assert await txn.init() == (51, -1)
            assert (await scenario.describe(txn.c, "t1"))[1] == "PrepareCommit"
            emu.advance(30_000)
            assert await scenario.list_offsets(txn.c, txn.topic, 1) == 3
            assert (await scenario.describe(txn.c, "t1"))[1] == "CompleteCommit"
            await txn.c.close()

    asyncio.run(run())


def test_injected_errors_answer_end_txn_and_add_partitions_to_txn() -> None:
    async def run() -> None:
        async with Emulator(initial_rebalance_delay_ms=0, port=0) as emu:
            txn = await _begin(emu)
            emu.inject_error("AddPartitionsToTxn", "COORDINATOR_LOAD_IN_PROGRESS")
            assert await txn.add([(txn.topic, 0)]) == [("T", 0, 14)]
            emu.inject_error("EndTxn", "CONCURRENT_TRANSACTIONS")
            assert await txn.end(True) == 51
            assert await txn.end(True) == 0  # the retry commits
            await txn.c.close()

    asyncio.run(run())


def test_with_transaction_version_2_a_produce_during_delayed_markers_waits_for_them() -> None:
    async def run() -> None:
        async with Emulator(initial_rebalance_delay_ms=0, port=0, manual_clock=True) as emu:
            host, port = emu.bootstrap_servers.rsplit(":", 1)
            conn = await scenario.RawConnection.open(host, int(port))
            topic, _facts = await scenario._setup(conn, "t2")
            txn = Txn(conn, topic, "t2")
            assert await txn.init(version=5) == (0, 0)
            assert (await txn.produce(0, version=12))[0] == 0  # added by the broker itself
            emu.delay_transaction_markers(30_000)
            assert await txn.end_v5(True) == (0, "P", 1)
            txn.epoch += 1
            assert (await txn.produce(0, version=12))[0] == 51  # CONCURRENT_TRANSACTIONS until the markers
            emu.advance(30_000)
            assert (await txn.produce(0, version=12))[0] == 0
            await conn.close()

    asyncio.run(run())
