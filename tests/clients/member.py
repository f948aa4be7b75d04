"""One consumer-group member, run as its own process by the client tests.

    python tests/clients/member.py '<MemberSpec as JSON>'

It drives one real client library (aiokafka, kafka-python or confluent-kafka) in a
subscribe/poll loop and reports what happens as JSON lines on stdout, each stamped with
``time.monotonic()`` (CLOCK_MONOTONIC, shared by every process on the machine, so the
test can order events of different members):

* ``started`` - the consumer object exists;
* ``assigned`` / ``revoked`` / ``lost`` - rebalance-listener callbacks with their partitions
  (incremental under cooperative-sticky, whole sets under eager);
* ``assignment`` - the client's full assignment whenever it changes;
* ``records`` - ``[partition, offset]`` of each record handed to the application;
* ``committed`` / ``commit_failed`` - a synchronous commit of the processed records;
* ``closed`` - the consumer closed (a dynamic member sends LeaveGroup here).

SIGTERM asks for a clean close; SIGKILL (sent by the tests) is a crash. The script imports
nothing from the repository, so a member can run against any broker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

Emit = Callable[..., None]

_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    line = json.dumps({"t": time.monotonic(), "ev": event, **fields})
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Stop:
    def __init__(self) -> None:
        self.requested = False

    def request(self, *_args: object) -> None:
        self.requested = True


def _last_offsets(pairs: list[tuple[int, int]]) -> dict[int, int]:
    """The offset to commit per partition: one past the last record processed."""
    out: dict[int, int] = {}
    for partition, offset in pairs:
        out[partition] = max(out.get(partition, 0), offset + 1)
    return out


def _process(spec: dict[str, Any], pairs: list[tuple[int, int]]) -> None:
    if pairs:
        emit("records", items=pairs)
        if spec.get("delay_ms"):
            time.sleep(spec["delay_ms"] / 1000)


# -- kafka-python ------------------------------------------------------------------------------

# kafka-python 3.0.12 loses its heartbeat when poll() times out while a JoinGroup/SyncGroup is in
# flight and that join completes before the next poll(): ``join_group_async`` returns False on the
# timeout, leaving the join task running; the next call finds ``need_rejoin()`` False and skips the
# block that sets the state to STABLE and calls ``_enable_heartbeat()``. The member then never
# heartbeats again, never notices the next rebalance and is expired at its session timeout. Seen
# against the emulator (both flavors) with poll(timeout_ms=100), and the same hang is noted in
# tests/broker's smoke test against a real broker. A poll timeout longer than any join here avoids it.
KAFKA_PYTHON_POLL_MS = 3000


def run_kafka_python(spec: dict[str, Any], stop: Stop) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                 "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
    topic = spec["topic"]

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        # kafka-python calls these on its I/O thread, and its poll() may not return for a while
        # (see KAFKA_PYTHON_POLL_MS), so the new assignment is reported from here too.
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", partitions=sorted(tp.partition for tp in revoked))
            emit("assignment", partitions=sorted({tp.partition for tp in consumer.assignment()}
                                                 - {tp.partition for tp in revoked}))

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", partitions=sorted(tp.partition for tp in assigned))
            emit("assignment", partitions=sorted(tp.partition for tp in consumer.assignment()))

        def on_partitions_lost(self, lost: Any) -> None:
            self.on_partitions_revoked(lost)

    consumer = KafkaConsumer(
        bootstrap_servers=spec["bootstrap"], group_id=spec["group"], client_id=spec["client_id"],
        group_instance_id=spec.get("instance_id"), session_timeout_ms=spec["session_timeout_ms"],
        heartbeat_interval_ms=spec["heartbeat_interval_ms"], max_poll_interval_ms=spec["max_poll_interval_ms"],
        partition_assignment_strategy=[assignors[name] for name in spec["strategies"]],
        enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=spec["max_poll_records"],
    )
    emit("started")
    try:
        # Subscribe once the topic's partitions are known: a leader that joins before it has
        # them assigns nothing and rebalances again at once (tests/broker smoke test).
        deadline = time.monotonic() + 30
        while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
            time.sleep(0.05)
        consumer.subscribe([topic], listener=Listener())
        last: list[int] | None = None
        while not stop.requested:
            batches = consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
            pairs = [(r.partition, r.offset) for records in batches.values() for r in records]
            _process(spec, pairs)
            if pairs and spec.get("commit"):
                offsets = {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                           for p, o in _last_offsets(pairs).items()}
                try:
                    consumer.commit(offsets)
                    emit("committed", offsets=sorted(_last_offsets(pairs).items()))
                except KafkaError as exc:
                    emit("commit_failed", error=repr(exc))
            now = sorted(tp.partition for tp in consumer.assignment())
            if now != last:
                emit("assignment", partitions=now)
                last = now
    finally:
        consumer.close()
        emit("closed")


# -- confluent-kafka ------------------------------------------------------------------------------


class _ConfluentCallbacks:
    """Rebalance callbacks that (un)assign explicitly: incrementally under cooperative-sticky."""

    def __init__(self, incremental: bool) -> None:
        self.incremental = incremental

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        emit("assigned", partitions=sorted(tp.partition for tp in partitions))
        if self.incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._release("revoked", consumer, partitions)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        self._release("lost", consumer, partitions)

    def _release(self, event: str, consumer: Any, partitions: list[Any]) -> None:
        emit(event, partitions=sorted(tp.partition for tp in partitions))
        if self.incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()


def _confluent_pairs(messages: list[Any]) -> list[tuple[int, int]]:
    pairs = []
    for message in messages:
        partition, offset = message.partition(), message.offset()
        if message.error() is None and partition is not None and offset is not None:
            pairs.append((int(partition), int(offset)))
    return pairs


def run_confluent(spec: dict[str, Any], stop: Stop) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"], "group.id": spec["group"], "client.id": spec["client_id"],
        "session.timeout.ms": spec["session_timeout_ms"], "heartbeat.interval.ms": spec["heartbeat_interval_ms"],
        "max.poll.interval.ms": spec["max_poll_interval_ms"],
        "partition.assignment.strategy": ",".join(spec["strategies"]),
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
    }
    if spec.get("instance_id"):
        config["group.instance.id"] = spec["instance_id"]
    topic = spec["topic"]

    # The Python binding does not expose rd_kafka_rebalance_protocol(); librdkafka is cooperative
    # exactly when cooperative-sticky is the (only) strategy, as it refuses to mix the two.
    callbacks = _ConfluentCallbacks(incremental=spec["strategies"] == ["cooperative-sticky"])
    consumer = Consumer(config)
    emit("started")
    try:
        consumer.subscribe([topic], on_assign=callbacks.on_assign, on_revoke=callbacks.on_revoke,
                           on_lost=callbacks.on_lost)
        last: list[int] | None = None
        while not stop.requested:
            messages = consumer.consume(num_messages=spec["max_poll_records"], timeout=0.1)
            pairs = _confluent_pairs(messages)
            _process(spec, pairs)
            if pairs and spec.get("commit"):
                offsets = [TopicPartition(topic, p, o) for p, o in _last_offsets(pairs).items()]
                try:
                    consumer.commit(offsets=offsets, asynchronous=False)
                    emit("committed", offsets=sorted(_last_offsets(pairs).items()))
                except KafkaException as exc:
                    emit("commit_failed", error=repr(exc))
            now = sorted(tp.partition for tp in consumer.assignment())
            if now != last:
                emit("assignment", partitions=now)
                last = now
    finally:
        consumer.close()
        emit("closed")


# -- aiokafka ----------------------------------------------------------------------------------------


async def run_aiokafka(spec: dict[str, Any], stop: Stop) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from aiokafka.errors import KafkaError

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                 "sticky": StickyPartitionAssignor}
    topic = spec["topic"]

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", partitions=sorted(tp.partition for tp in assigned))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=spec["bootstrap"], group_id=spec["group"], client_id=spec["client_id"],
        group_instance_id=spec.get("instance_id"), session_timeout_ms=spec["session_timeout_ms"],
        heartbeat_interval_ms=spec["heartbeat_interval_ms"], max_poll_interval_ms=spec["max_poll_interval_ms"],
        partition_assignment_strategy=tuple(assignors[name] for name in spec["strategies"]),
        enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=spec["max_poll_records"],
    )
    consumer.subscribe([topic], listener=Listener())
    await consumer.start()
    emit("started")
    try:
        last: list[int] | None = None
        while not stop.requested:
            batches = await consumer.getmany(timeout_ms=100, max_records=spec["max_poll_records"])
            pairs = [(r.partition, r.offset) for records in batches.values() for r in records]
            _process(spec, pairs)
            if pairs and spec.get("commit"):
                try:
                    await consumer.commit({TopicPartition(topic, p): o for p, o in _last_offsets(pairs).items()})
                    emit("committed", offsets=sorted(_last_offsets(pairs).items()))
                except KafkaError as exc:
                    emit("commit_failed", error=repr(exc))
            now = sorted(tp.partition for tp in consumer.assignment())
            if now != last:
                emit("assignment", partitions=now)
                last = now
    finally:
        await consumer.stop()
        emit("closed")


def main() -> None:
    spec = json.loads(sys.argv[1])
    debug = os.environ.get("CLIENTS_MEMBER_DEBUG") == "1"
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    stop = Stop()
    signal.signal(signal.SIGTERM, stop.request)
    client = spec["client"]
    if client == "kafka-python":
        run_kafka_python(spec, stop)
    elif client == "confluent-kafka":
        run_confluent(spec, stop)
    elif client == "aiokafka":
        asyncio.run(run_aiokafka(spec, stop))
    else:
        raise SystemExit(f"unknown client {client!r}")


if __name__ == "__main__":
    main()
