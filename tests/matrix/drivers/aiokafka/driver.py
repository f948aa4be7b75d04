"""Matrix driver for aiokafka: one consumer-group member (see ``member_io`` for the protocol).

aiokafka 0.14 has no cooperative assignor; it runs the eager sticky assignor by default here.
``AIOKafkaConsumer.stop()`` commits and sends LeaveGroup; a crash is the test SIGKILLing this process.

    python -m tests.matrix.drivers.aiokafka.driver --bootstrap H:P --topic T --group G --member a
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from tests.matrix.drivers.member_io import emit, emit_records, parse_args, partitions, watch_stdin

ASSIGNORS: dict[str, Any] = {
    "sticky": StickyPartitionAssignor, "range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
}


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def on_partitions_revoked(self, revoked: Any) -> None:
        emit(event="revoked", partitions=partitions(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        emit(event="assigned", partitions=partitions(assigned))


async def run() -> None:
    args = parse_args("sticky")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=f"matrix-aiokafka-{args.member}",
        session_timeout_ms=args.session_timeout_ms, heartbeat_interval_ms=args.heartbeat_ms,
        auto_offset_reset="earliest", fetch_max_wait_ms=500,
        partition_assignment_strategy=(ASSIGNORS[args.assignor],),
    )
    loop = asyncio.get_running_loop()
    closing = asyncio.Event()

    def on_close() -> None:
        loop.call_soon_threadsafe(closing.set)

    watch_stdin(on_close)
    consumer.subscribe([args.topic], listener=_Listener())
    await consumer.start()
    emit(event="started", client="aiokafka", version=aiokafka.__version__, assignor=args.assignor)
    try:
        while not closing.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                emit_records((r.partition, r.offset) for r in records)
    finally:
        await consumer.stop()  # commits (auto-commit) and sends LeaveGroup
    emit(event="closed")


if __name__ == "__main__":
    asyncio.run(run())
