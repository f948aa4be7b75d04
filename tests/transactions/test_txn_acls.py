"""Authorization of the transaction APIs, as KafkaApis checks it: WRITE on the transactional id for
InitProducerId, AddPartitionsToTxn, EndTxn and a Produce of transactional records (the whole request fails);
READ on the group for AddOffsetsToTxn; DESCRIBE for DescribeTransactions and what ListTransactions lists."""

from __future__ import annotations

from pathlib import Path

from tests.security.acl_support import acl_emulator
from tests.security.test_acl_enforcement import acl
from tests.transactions.scenario import Txn


async def test_transaction_apis_need_their_acls(tmp_path: Path) -> None:
    acls = [acl("ALL", "TOPIC", "t"), acl("WRITE", "TRANSACTIONAL_ID", "ok"), acl("DESCRIBE", "TRANSACTIONAL_ID", "ok")]
    async with acl_emulator(tmp_path, acls, topics=(("t", 1),)) as conn:
        ok, denied = Txn(conn, "t", "ok"), Txn(conn, "t", "no")
        assert await ok.init() == (0, 0)
        assert await denied.init() == (53, -1)
        denied.pid, denied.epoch = ok.pid, ok.epoch
        assert await ok.add([("t", 0)]) == [("T", 0, 0)]
        assert await denied.add([("t", 0)]) == [("T", 0, 53)]
        assert await denied.produce(0) == (53, -1, None)  # transactional records under a denied id
        assert (await ok.produce(0))[0] == 0
        assert await ok.add_offsets("g") == 30  # no READ on the group
        assert await denied.end(True) == 53
        described = await conn.request(65, 0, transactional_ids=["ok", "no"])
        assert [s.error_code for s in described.transaction_states] == [0, 53]
        listed = await conn.request(66, 1, state_filters=[], producer_id_filters=[], duration_filter=-1)
        assert [s.transactional_id for s in listed.transaction_states] == ["ok"]
        assert await ok.end(True) == 0
