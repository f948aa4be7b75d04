"""Matrix driver for kafka-python: one consumer-group member (see ``member_io`` for the protocol).

``KafkaConsumer.close()`` commits and sends LeaveGroup; a crash is the test SIGKILLing this process.

kafka-python 3.0.12 has a race: when ``poll(timeout_ms)`` runs out while a rejoin's JoinGroup/SyncGroup
is in flight, the SyncGroup response arrives but the join never completes in the client: heartbeats
stay disabled, ``poll()`` spins in ``ensure_coordinator_ready`` and the member's session expires for
good (seen about once in 15 runs with 200 ms polls, when the first leader assigned before it had the
topic's metadata and rejoined at once). Polling for 1 s made the window rarer; learning the topic's partitions
before subscribing (tests/support/kafka_python_join) closes it: the first leader has them, so it never rejoins.

    python -m tests.matrix.drivers.kafka_python.driver --bootstrap H:P --topic T --group G --member a
"""

from __future__ import annotations

import threading
from typing import Any

import kafka
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from tests.matrix.drivers.member_io import emit, emit_records, parse_args, partitions, watch_stdin
from tests.support.kafka_python_join import know_partitions_before_joining

ASSIGNORS: dict[str, Any] = {
    "cooperative-sticky": CooperativeStickyAssignor, "sticky": StickyPartitionAssignor,
    "range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
}


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def on_partitions_revoked(self, revoked: Any) -> None:
        emit(event="revoked", partitions=partitions(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        emit(event="assigned", partitions=partitions(assigned))

    def on_partitions_lost(self, lost: Any) -> None:
        emit(event="lost", partitions=partitions(lost))


def main() -> None:
    args = parse_args("cooperative-sticky")
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=f"matrix-kafka-python-{args.member}",
        session_timeout_ms=args.session_timeout_ms, heartbeat_interval_ms=args.heartbeat_ms,
        auto_offset_reset="earliest", fetch_max_wait_ms=500,
        partition_assignment_strategy=[ASSIGNORS[args.assignor]],
    )
    emit(event="started", client="kafka-python", version=kafka.__version__, assignor=args.assignor)
    closing = threading.Event()
    watch_stdin(closing.set)
    know_partitions_before_joining(consumer, [args.topic])
    consumer.subscribe([args.topic], listener=_Listener())
    while not closing.is_set():
        for records in consumer.poll(timeout_ms=1000).values():
            emit_records((r.partition, r.offset) for r in records)
    consumer.close()  # commits (auto-commit) and sends LeaveGroup
    emit(event="closed")


if __name__ == "__main__":
    main()
