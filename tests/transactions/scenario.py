"""One raw-protocol transaction scenario, run the same way on the emulator and on a real broker.

It returns the facts it saw as (label, value) pairs with the run-dependent parts (producer ids,
timestamps, topic names) normalised, so the two lists can be compared as they are.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from rebalance_lab.coordinator.transactions.batches import encode_batch
from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection

_PR, _AP, _LO, _FR = (codec.request_type(k) for k in (0, 24, 2, 1))
_CT, _TC, _OF, _DP = (codec.request_type(k) for k in (19, 28, 9, 61))
Facts = list[tuple[str, Any]]


class Txn:
    def __init__(self, conn: RawConnection, topic: str, txn_id: str) -> None:
        self.c, self.topic, self.txn_id = conn, topic, txn_id
        self.pid, self.epoch = -1, -1

    async def init(self, timeout_ms: int = 60_000, version: int = 4) -> tuple[int, int]:
        r = await self.c.request(22, version, transactional_id=self.txn_id, transaction_timeout_ms=timeout_ms,
                                 producer_id=-1, producer_epoch=-1)
        if r.error_code == 0:
            self.pid, self.epoch = r.producer_id, r.producer_epoch
        return r.error_code, r.producer_epoch

    async def produce(self, seq: int, n: int = 1, epoch: int | None = None, partition: int = 0,
                      version: int = 9) -> tuple[Any, ...]:
        batch = encode_batch([(None, b"v%d" % (seq + i)) for i in range(n)], producer_id=self.pid,
                             producer_epoch=self.epoch if epoch is None else epoch, base_sequence=seq,
                             transactional=True, timestamp=int(time.time() * 1000))
        data = _PR.TopicProduceData.PartitionProduceData(index=partition, records=batch)
        r = await self.c.request(0, version, transactional_id=self.txn_id, acks=-1, timeout_ms=5000,
                                 topic_data=[_PR.TopicProduceData(name=self.topic, partition_data=[data])])
        p = r.responses[0].partition_responses[0]
        return p.error_code, p.base_offset, p.error_message

    async def add(self, partitions: list[tuple[str, int]], version: int = 3, epoch: int | None = None) -> list[Any]:
        topics: dict[str, list[int]] = {}
        for name, index in partitions:
            topics.setdefault(name, []).append(index)
        r = await self.c.request(24, version, v3_and_below_transactional_id=self.txn_id,
                                 v3_and_below_producer_id=self.pid,
                                 v3_and_below_producer_epoch=self.epoch if epoch is None else epoch,
                                 v3_and_below_topics=[_AP.AddPartitionsToTxnTopic(name=n, partitions=p)
                                                      for n, p in topics.items()])
        return sorted((_t(t.name, self.topic), p.partition_index, p.partition_error_code)
                      for t in r.results_by_topic_v3_and_below for p in t.results_by_partition)

    async def end(self, commit: bool, version: int = 3) -> int:
        r = await self.c.request(26, version, transactional_id=self.txn_id, producer_id=self.pid,
                                 producer_epoch=self.epoch, committed=commit)
        return int(r.error_code)

    async def add_offsets(self, group: str) -> int:
        r = await self.c.request(25, 3, transactional_id=self.txn_id, producer_id=self.pid,
                                 producer_epoch=self.epoch, group_id=group)
        return int(r.error_code)

    async def end_v5(self, commit: bool, epoch: int | None = None) -> tuple[int, str, int]:
        """EndTxn v5 (transaction version 2): the answer carries the producer id and the bumped epoch."""
        r = await self.c.request(26, 5, transactional_id=self.txn_id, producer_id=self.pid,
                                 producer_epoch=self.epoch if epoch is None else epoch, committed=commit)
        pid = "P" if r.producer_id == self.pid else str(r.producer_id)
        return int(r.error_code), pid, r.producer_epoch - self.epoch if r.producer_epoch >= 0 else -1

    async def commit_offset(self, group: str, offset: int, generation: int = -1, member: str = "",
                            version: int = 3) -> int:
        part = _TC.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="m")
        r = await self.c.request(28, version, transactional_id=self.txn_id, group_id=group, producer_id=self.pid,
                                 producer_epoch=self.epoch, generation_id=generation, member_id=member,
                                 group_instance_id=None,
                                 topics=[_TC.TxnOffsetCommitRequestTopic(name=self.topic, partitions=[part])])
        return int(r.topics[0].partitions[0].error_code)


def _t(name: str, topic: str) -> str:
    return "T" if name == topic else name


async def list_offsets(c: RawConnection, topic: str, isolation: int) -> int:
    part = _LO.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)
    r = await c.request(2, 7, replica_id=-1, isolation_level=isolation,
                        topics=[_LO.ListOffsetsTopic(name=topic, partitions=[part])])
    return int(r.topics[0].partitions[0].offset)


async def fetch(c: RawConnection, topic: str, isolation: int, pids: dict[int, str]) -> tuple[Any, ...]:
    part = _FR.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                         partition_max_bytes=100_000)
    r = await c.request(1, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=100_000,
                        isolation_level=isolation, session_id=0, session_epoch=-1,
                        topics=[_FR.FetchTopic(topic=topic, partitions=[part])], forgotten_topics_data=[], rack_id="")
    p = r.responses[0].partitions[0]
    aborted = None if p.aborted_transactions is None else [
        (pids.get(a.producer_id, a.producer_id), a.first_offset) for a in p.aborted_transactions]
    return p.error_code, p.high_watermark, p.last_stable_offset, aborted, len(p.records or b"") > 0


async def offset_fetch(c: RawConnection, group: str, topic: str, stable: bool) -> tuple[int, int]:
    r = await c.request(9, 7, group_id=group, require_stable=stable,
                        topics=[_OF.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])])
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


_PREPARED = ("PrepareCommit", "PrepareAbort", "PrepareEpochFence")


async def settled(c: RawConnection, topic: str, txn_id: str) -> None:
    """Markers are written after EndTxn's answer on a real broker: wait until the LSO reaches the HW, and until the
    transaction coordinator has heard that they were written (it leaves PrepareCommit/PrepareAbort only then, a
    moment after the partition shows them: an EndTxn in that window is answered CONCURRENT_TRANSACTIONS, seen once
    on 4.4.0 at load 18)."""
    for _ in range(100):
        if await list_offsets(c, topic, 1) == await list_offsets(c, topic, 0):
            break
        await asyncio.sleep(0.05)
    for _ in range(100):
        r = await c.request(65, 0, transactional_ids=[txn_id])
        if r.transaction_states[0].transaction_state not in _PREPARED:
            return
        await asyncio.sleep(0.05)


async def describe(c: RawConnection, txn_id: str) -> tuple[Any, ...]:
    r = await c.request(65, 0, transactional_ids=[txn_id])
    s = r.transaction_states[0]
    return (s.error_code, s.transaction_state, s.transaction_timeout_ms, s.transaction_start_time_ms >= 0,
            s.producer_epoch, [(t.topic.startswith("txn-"), list(t.partitions)) for t in s.topics])


async def run(host_port: str) -> Facts:
    host, port = host_port.rsplit(":", 1)
    c = await RawConnection.open(host, int(port))
    try:
        return await _scenario(c)
    finally:
        await c.close()


async def _setup(c: RawConnection, txn_id: str) -> tuple[str, Facts]:
    topic = "txn-" + uuid.uuid4().hex[:8]
    create = _CT.CreatableTopic(name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])
    await c.request(19, 5, topics=[create], timeout_ms=10_000, validate_only=False)
    part = _LO.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)
    for _ in range(100):  # a real broker leads a new partition a moment after CreateTopics answers
        r = await c.request(2, 7, replica_id=-1, isolation_level=0,
                            topics=[_LO.ListOffsetsTopic(name=topic, partitions=[part])])
        if r.topics[0].partitions[0].error_code == 0:
            break
        await asyncio.sleep(0.1)
    for _ in range(100):  # the transaction state topic is created on the first FindCoordinator
        r = await c.request(10, 4, key_type=1, coordinator_keys=[txn_id])
        if r.coordinators[0].error_code == 0:
            break
        await asyncio.sleep(0.2)
    return topic, [("find-coordinator", r.coordinators[0].error_code)]


async def _scenario(c: RawConnection) -> Facts:
    txn_id, group = "tx-" + uuid.uuid4().hex[:8], "g-" + uuid.uuid4().hex[:8]
    topic, facts = await _setup(c, txn_id)
    t = Txn(c, topic, txn_id)
    for _ in range(100):  # a coordinator still loading its state partition: retried, as clients do
        init = await t.init()
        if init[0] not in (14, 15, 16):
            break
        await asyncio.sleep(0.2)
    facts.append(("init", init))
    pids = {t.pid: "P"}
    facts.append(("produce before AddPartitionsToTxn", await t.produce(0)))
    facts.append(("add unknown topic", await t.add([(topic, 0), ("no-such-topic-x", 0)])))
    facts.append(("add", await t.add([(topic, 0)])))
    facts.append(("produce seq 0", await t.produce(0, 2)))
    facts.append(("duplicate of seq 0", await t.produce(0, 2)))
    facts.append(("seq 5 out of order", await t.produce(5)))
    facts.append(("seq 2", await t.produce(2)))
    facts.append(("latest uncommitted / committed", (await list_offsets(c, topic, 0), await list_offsets(c, topic, 1))))
    facts.append(("fetch read_committed while open", await fetch(c, topic, 1, pids)))
    facts.append(("describe ongoing", await describe(c, txn_id)))
    r = await c.request(66, 1, state_filters=["Ongoing"], producer_id_filters=[t.pid], duration_filter=-1)
    facts.append(("list ongoing", [(s.transactional_id == txn_id, s.transaction_state) for s in r.transaction_states]))
    r = await c.request(66, 1, state_filters=["Bogus"], producer_id_filters=[], duration_filter=-1)
    facts.append(("list unknown state", (r.error_code, list(r.unknown_state_filters), len(r.transaction_states))))
    r = await c.request(66, 1, state_filters=["Ongoing", "Bogus"], producer_id_filters=[t.pid], duration_filter=-1)
    facts.append(("list known and unknown states", (list(r.unknown_state_filters), len(r.transaction_states))))
    r = await c.request(66, 1, state_filters=[], producer_id_filters=[t.pid], duration_filter=3_600_000)
    facts.append(("list running over an hour", len(r.transaction_states)))
    r = await c.request(61, 0, topics=[_DP.TopicRequest(name=topic, partition_indexes=[0])])
    facts.append(("producers", [(p.producer_epoch, p.last_sequence, p.current_txn_start_offset)
                                for p in r.topics[0].partitions[0].active_producers]))
    facts.append(("abort", await t.end(False)))
    await settled(c, topic, t.txn_id)
    facts.append(("fetch read_committed after abort", await fetch(c, topic, 1, pids)))
    facts.append(("fetch read_uncommitted after abort", await fetch(c, topic, 0, pids)))
    facts.append(("abort again", await t.end(False)))
    facts.append(("commit after abort", await t.end(True)))
    facts.append(("describe complete", await describe(c, txn_id)))
    facts += await _offsets_part(c, t, group)
    facts += await _fencing_part(c, t)
    return facts


async def _offsets_part(c: RawConnection, t: Txn, group: str) -> Facts:
    facts: Facts = []
    facts.append(("txn offset commit before AddOffsetsToTxn", await t.commit_offset(group, 1)))
    facts.append(("add 2", await t.add([(t.topic, 0)])))
    facts.append(("produce seq 3", await t.produce(3)))
    facts.append(("txn offset commit without add offsets", await t.commit_offset(group, 1)))
    facts.append(("add offsets", await t.add_offsets(group)))
    facts.append(("txn offset commit, unknown group with generation", await t.commit_offset(group, 1, 3, "m")))
    facts.append(("txn offset commit", await t.commit_offset(group, 5)))
    facts.append(("offset fetch require_stable", await offset_fetch(c, group, t.topic, True)))
    facts.append(("offset fetch", await offset_fetch(c, group, t.topic, False)))
    facts.append(("commit", await t.end(True)))
    await settled(c, t.topic, t.txn_id)
    facts.append(("offset fetch after commit", await offset_fetch(c, group, t.topic, True)))
    facts.append(("fetch read_committed after commit", await fetch(c, t.topic, 1, {t.pid: "P"})))
    return facts


async def _fencing_part(c: RawConnection, t: Txn) -> Facts:
    facts: Facts = []
    facts.append(("add 3", await t.add([(t.topic, 0)])))
    facts.append(("produce seq 4", await t.produce(4)))
    other = Txn(c, t.topic, t.txn_id)
    facts.append(("second init while ongoing", await other.init()))
    for _ in range(100):  # CONCURRENT_TRANSACTIONS until the fencing abort's markers are written
        retried = await other.init()
        if retried[0] != 51:
            break
        await asyncio.sleep(0.05)
    facts.append(("second init retried", retried))
    facts.append(("epoch bumped by", other.epoch - t.epoch))
    facts.append(("old epoch produce", await t.produce(5)))
    facts.append(("old epoch EndTxn v1 / v3", (await t.end(True, 1), await t.end(True, 3))))
    old_adds = (await t.add([(t.topic, 0)], 1), await t.add([(t.topic, 0)]))
    facts.append(("old epoch AddPartitionsToTxn v1 / v3", old_adds))
    await settled(c, t.topic, t.txn_id)
    facts.append(("fetch read_committed after fence", await fetch(c, t.topic, 1, {t.pid: "P"})))
    facts.append(("new producer adds", await other.add([(t.topic, 0)])))
    facts.append(("new producer starts at seq 0", await other.produce(0)))
    return facts


async def run_v2(host_port: str) -> Facts:
    """Transaction version 2 (KIP-890 part 2), as a 4.4.0 broker finalizes it: implicit partition adds by
    Produce v12 and TxnOffsetCommit v5, an epoch bump at every EndTxn v5 and the retries it accepts."""
    host, port = host_port.rsplit(":", 1)
    c = await RawConnection.open(host, int(port))
    try:
        av = await c.request(18, 3, client_software_name="t", client_software_version="1")
        features = sorted((f.name, f.min_version_level, f.max_version_level) for f in av.finalized_features
                          if f.name == "transaction.version")
        txn_id, group = "tx2-" + uuid.uuid4().hex[:8], "g2-" + uuid.uuid4().hex[:8]
        topic, facts = await _setup(c, txn_id)
        facts.append(("finalized transaction.version", features))
        t = Txn(c, topic, txn_id)
        for _ in range(100):
            init = await t.init(version=5)
            if init[0] not in (14, 15, 16):
                break
            await asyncio.sleep(0.2)
        facts.append(("init", init))
        facts.append(("produce v12 without AddPartitionsToTxn", await t.produce(0, 2, version=12)))
        facts.append(("describe after implicit add", await describe(c, txn_id)))
        facts.append(("txn offset commit v5 without AddOffsetsToTxn", await t.commit_offset(group, 2, version=5)))
        facts.append(("offset fetch require_stable", await offset_fetch(c, group, topic, True)))
        facts.append(("commit v5", await t.end_v5(True)))
        await settled(c, topic, t.txn_id)
        facts.append(("retried commit v5 (old epoch)", await t.end_v5(True)))
        facts.append(("commit v5 again at the new epoch", await t.end_v5(True, t.epoch + 1)))
        facts.append(("offset fetch after commit", await offset_fetch(c, group, topic, True)))
        facts.append(("old epoch produce", await t.produce(2, version=12)))
        t.epoch += 1
        facts.append(("new epoch produce from seq 0", await t.produce(0, version=12)))
        facts.append(("abort v5", await t.end_v5(False)))
        await settled(c, topic, t.txn_id)
        facts.append(("fetch read_committed", await fetch(c, topic, 1, {t.pid: "P"})))
        r = await c.request(61, 0, topics=[_DP.TopicRequest(name=topic, partition_indexes=[0])])
        facts.append(("producers", [(p.producer_epoch - t.epoch, p.last_sequence, p.current_txn_start_offset)
                                    for p in r.topics[0].partitions[0].active_producers]))
        facts.append(("describe complete", await describe(c, txn_id)))
        return facts
    finally:
        await c.close()


async def run_timeout(host_port: str, wait_for_the_abort: Any) -> Facts:
    """A transaction past its timeout (1 s) is fenced and aborted by the coordinator's periodic check:
    ``wait_for_the_abort(conn, txn_id)`` waits for it (a real broker: up to the 10 s check interval)."""
    host, port = host_port.rsplit(":", 1)
    c = await RawConnection.open(host, int(port))
    try:
        txn_id = "txt-" + uuid.uuid4().hex[:8]
        topic, facts = await _setup(c, txn_id)
        t = Txn(c, topic, txn_id)
        for _ in range(100):
            init = await t.init(timeout_ms=1000)
            if init[0] not in (14, 15, 16):
                break
            await asyncio.sleep(0.2)
        facts.append(("init", init))
        facts.append(("add", await t.add([(topic, 0)])))
        facts.append(("produce", await t.produce(0, 2)))
        await wait_for_the_abort(c, txn_id)
        await settled(c, topic, t.txn_id)
        facts.append(("after the timeout", await describe(c, txn_id)))
        facts.append(("fetch read_committed", await fetch(c, topic, 1, {t.pid: "P"})))
        facts.append(("old epoch AddPartitionsToTxn", await t.add([(topic, 0)])))
        facts.append(("old epoch EndTxn", await t.end(True)))
        facts.append(("old epoch produce", await t.produce(2)))
        facts.append(("init again", await t.init(timeout_ms=1000)))
        return facts
    finally:
        await c.close()


async def poll_until_aborted(c: RawConnection, txn_id: str) -> None:
    for _ in range(80):
        if (await describe(c, txn_id))[1] == "CompleteAbort":
            return
        await asyncio.sleep(0.25)
