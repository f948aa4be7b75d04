"""Unrelated broker lines to interleave with the group lines (``noise=True``).

A production ``server.log`` is mostly other things. These lines exercise a parser's
filtering: two of them share the group coordinator's own prefix and logger family, one is
a WARN with a multi-line stack trace. Texts follow Kafka 3.x/4.x sources (``LocalLog``,
``GroupMetadataManager.cleanupGroupMetadata``, ``GroupCoordinatorShard``, ``Selector``);
the numbers in them are made up, deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NoiseLine:
    level: str
    message: str
    logger: str
    trace: tuple[str, ...] = ()  # a stack trace: log4j prints it on the lines after the envelope


def _segment_roll(n: int) -> NoiseLine:
    return NoiseLine("INFO", f"[LocalLog partition=orders-{n % 12}, dir=/var/lib/kafka/data] "
                             f"Rolled new log segment at offset {1_000 * (n + 1) + 17} in {n % 7 + 1} ms.",
                     "kafka.log.LocalLog")


def _expired_offsets(n: int, broker_id: int, partition: int, java: bool) -> NoiseLine:
    if java:
        return NoiseLine("INFO", f"[GroupCoordinator id={broker_id} topic=__consumer_offsets partition={partition}] "
                                 f"Generated 0 tombstone records while cleaning up group metadata in {n % 3} "
                                 "milliseconds.", "org.apache.kafka.coordinator.group.GroupCoordinatorShard")
    return NoiseLine("INFO", f"[GroupMetadataManager brokerId={broker_id}] Removed 0 expired offsets in {n % 3} "
                             "milliseconds.", "kafka.coordinator.group.GroupMetadataManager")


def _closed_connection(n: int, broker_id: int) -> NoiseLine:
    return NoiseLine(
        "WARN",
        f"[SocketServer listenerType=BROKER, nodeId={broker_id}] Unexpected error from /10.0.3.{n % 250 + 1} "
        f"(channelId=10.0.0.{broker_id + 1}:9092-10.0.3.{n % 250 + 1}:5{n % 10}412-{n}); closing connection",
        "org.apache.kafka.common.network.Selector",
        ("java.io.IOException: Connection reset by peer",
         "\tat java.base/sun.nio.ch.SocketDispatcher.read0(Native Method)",
         "\tat org.apache.kafka.common.network.Selector.poll(Selector.java:481)"),
    )


def noise(n: int, broker_id: int, partition: int, java: bool) -> NoiseLine:
    """The ``n``-th noise line: a cycle of the kinds above."""
    kind = n % 3
    if kind == 0:
        return _segment_roll(n)
    if kind == 1:
        return _expired_offsets(n, broker_id, partition, java)
    return _closed_connection(n, broker_id)
