"""A transaction left open when the emulator stops is aborted when the data directory is loaded again.

The transaction coordinator's state is not stored (FIDELITY.md), and markers are written before EndTxn is
answered, so an open transaction in a restored log was never committed: it is aborted at load (the marker is
stored as well), instead of holding the last stable offset back for ever. A committed one stays visible.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rebalance_lab.api import Emulator
from tests.transactions import scenario
from tests.transactions.scenario import Txn


async def _connect(emu: Emulator) -> scenario.RawConnection:
    host, port = emu.bootstrap_servers.rsplit(":", 1)
    return await scenario.RawConnection.open(host, int(port))


def test_a_transaction_open_at_shutdown_is_aborted_when_the_data_directory_is_loaded(tmp_path: Path) -> None:
    async def first_run() -> str:
        async with Emulator(initial_rebalance_delay_ms=0, port=0, data_dir=str(tmp_path)) as emu:
            conn = await _connect(emu)
            topic, _ = await scenario._setup(conn, "committed")
            done = Txn(conn, topic, "committed")
            await done.init()
            await done.add([(topic, 0)])
            await done.produce(0, 2)
            assert await done.end(True) == 0
            left = Txn(conn, topic, "left-open")
            await left.init()
            await left.add([(topic, 0)])
            assert (await left.produce(0, 3))[0] == 0
            assert await scenario.list_offsets(conn, topic, 1) == 3  # held back at the open transaction
            await conn.close()
            return topic

    async def second_run(topic: str) -> None:
        for _ in range(2):  # and again: the abort marker was stored, nothing is aborted twice
            async with Emulator(initial_rebalance_delay_ms=0, port=0, data_dir=str(tmp_path)) as emu:
                conn = await _connect(emu)
                assert await scenario.list_offsets(conn, topic, 0) == 7  # 2 + marker + 3 + abort marker
                assert await scenario.list_offsets(conn, topic, 1) == 7
                error, _hw, lso, aborted, has_data = await scenario.fetch(conn, topic, 1, {})
                assert (error, lso, len(aborted or []), has_data) == (0, 7, 1, True)
                assert aborted is not None and aborted[0][1] == 3
                await conn.close()

    topic = asyncio.run(first_run())
    asyncio.run(second_run(topic))
