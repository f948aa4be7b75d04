"""A busy KIP-848 group written to a data directory's group log: do the log and the memory stay flat?

Drives the KIP-848 coordinator directly (no network: what is measured is the storage) with a group of steady
members beside one member that joins, is assigned, acks and leaves every cycle, each record written to a
``GroupStore`` as ``serve --data-dir`` writes it. Prints, every ``--report-every`` cycles, the records written
so far, the group log's size on disk, the records a reload would fold and the process RSS.

    .venv/bin/python benchmarks/consumer_compaction.py --cycles 20000 --report-every 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.consumer.topics import TopicImage, TopicsImage
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.storage.groups import GroupStore
from rebalance_lab.storage.segments import FlushPolicy

GROUP = "busy"
TOPICS = TopicsImage.of([TopicImage(uuid.UUID(int=0x0D), "orders", 12)])


class Driver:
    def __init__(self, store: GroupStore) -> None:
        self.coordinator = ConsumerGroupCoordinator(ConsumerGroupConfig(assignment_interval_ms=0))
        self.store = store
        self.now = 0
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, tuple[tuple[uuid.UUID, tuple[int, ...]], ...]] = {}
        self.written = 0

    def _write(self, records: list[GroupRecord]) -> None:
        for record in records:
            self.store.group_record(lambda _group: None, record)
        self.written += len(records)

    def heartbeat(self, member: str, epoch: int | None = None) -> None:
        joining = epoch == 0
        inp = ConsumerGroupHeartbeatInput(
            group_id=GROUP, member_id=member, member_epoch=self.epochs.get(member, 0) if epoch is None else epoch,
            rebalance_timeout_ms=60_000 if joining else -1, subscribed_topic_names=("orders",) if joining else None,
            topic_partitions=() if joining else self.owned.get(member, ()))
        fx = self.coordinator.heartbeat(self.now, inp, TOPICS, "t")
        self._write(fx.records)
        result = fx.reply_to("t")
        assert isinstance(result, HeartbeatResult)
        if inp.member_epoch < 0:
            self.epochs.pop(member, None)
            self.owned.pop(member, None)
            return
        self.epochs[member] = result.member_epoch
        if result.assignment is not None:
            self.owned[member] = tuple((t, tuple(ps)) for t, ps in result.assignment.items())

    def advance(self, ms: int) -> None:
        self.now += ms
        self._write(self.coordinator.fire_timers(self.now, TOPICS).records)

    def cycle(self, i: int, steady: list[str]) -> None:
        other = f"churn-{i}"
        self.heartbeat(other, 0)
        for _ in range(2):
            self.advance(500)
            for member in [*steady, other]:
                self.heartbeat(member)
        self.heartbeat(other, -1)
        for member in steady:
            self.heartbeat(member)


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=20_000)
    parser.add_argument("--report-every", type=int, default=2_000)
    parser.add_argument("--steady", type=int, default=4, help="members that stay in the group")
    parser.add_argument("--compaction-kib", type=int, default=64 * 1024,
                        help="rewrite the log once it grew by this much (the server's 64 MiB by default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = GroupStore(Path(directory), FlushPolicy(), compaction_bytes=args.compaction_kib * 1024)
        store.read()
        driver = Driver(store)
        steady = [f"steady-{i}" for i in range(args.steady)]
        for member in steady:
            driver.heartbeat(member, 0)
        started = time.perf_counter()
        for i in range(1, args.cycles + 1):
            driver.cycle(i, steady)
            if i % args.report_every == 0:
                log_bytes = sum(p.stat().st_size for p in Path(directory).rglob("*.log"))
                live = sum(len(records) for records in store.state.consumer.values())
                print(f"cycle {i:>7,}: records written {driver.written:>9,}  group log {log_bytes / 2**20:8.2f} MiB  "
                      f"records a reload folds {live:>4}  RSS {rss_mib():7.1f} MiB  "
                      f"({i / (time.perf_counter() - started):,.0f} cycles/s)", flush=True)
        store.close()


if __name__ == "__main__":
    main()
