"""Matrix driver for confluent-kafka (librdkafka): one consumer-group member (see ``member_io``).

``Consumer.close()`` commits and sends LeaveGroup (a leaving heartbeat, epoch -1, with
``--group-protocol consumer``); a crash is the test SIGKILLing this process.

    python -m tests.matrix.drivers.confluent_kafka.driver --bootstrap H:P --topic T --group G --member a
"""

from __future__ import annotations

import threading
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer

from tests.matrix.drivers.member_io import emit, emit_records, parse_args, partitions, watch_stdin

ASSIGNORS = ("cooperative-sticky", "range", "roundrobin")
SERVER_ASSIGNORS = ("uniform", "range")  # group.protocol=consumer: the broker's assignors (KIP-848)


def config(args: Any) -> dict[str, Any]:
    """The consumer's settings; with the consumer protocol the group timing is the broker's.

    librdkafka rejects ``session.timeout.ms``, ``heartbeat.interval.ms`` and
    ``partition.assignment.strategy`` when ``group.protocol=consumer``: the broker owns them.
    """
    common = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
              "client.id": f"matrix-confluent-{args.member}", "auto.offset.reset": "earliest",
              "fetch.wait.max.ms": 500, "enable.partition.eof": False}
    if args.group_protocol == "consumer":
        if args.assignor not in SERVER_ASSIGNORS:
            raise SystemExit(f"unknown server assignor {args.assignor}")
        return {**common, "group.protocol": "consumer", "group.remote.assignor": args.assignor}
    if args.assignor not in ASSIGNORS:
        raise SystemExit(f"unknown assignor {args.assignor}")
    return {**common, "session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": args.heartbeat_ms,
            "partition.assignment.strategy": args.assignor}


def main() -> None:
    args = parse_args("cooperative-sticky")
    consumer = Consumer(config(args))
    version = f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
    emit(event="started", client="confluent-kafka", version=version, assignor=args.assignor,
         group_protocol=args.group_protocol)
    closing = threading.Event()
    watch_stdin(closing.set)

    # With no assign()/incremental_assign() call in a callback the library applies the change itself.
    def on_assign(_consumer: Any, tps: Any) -> None:
        emit(event="assigned", partitions=partitions(tps))

    def on_revoke(_consumer: Any, tps: Any) -> None:
        emit(event="revoked", partitions=partitions(tps))

    def on_lost(_consumer: Any, tps: Any) -> None:
        emit(event="lost", partitions=partitions(tps))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not closing.is_set():
        records: list[tuple[int, int]] = []
        for message in consumer.consume(num_messages=500, timeout=0.2):
            error = message.error()
            if error is not None:
                emit(event="error", error=str(error))
                continue
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None  # set on every consumed record
            records.append((partition, offset))
        emit_records(records)
    consumer.close()  # commits (auto-commit) and sends LeaveGroup
    emit(event="closed")


if __name__ == "__main__":
    main()
