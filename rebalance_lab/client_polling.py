"""Drive synchronous consumers while a test waits (``Emulator.wait_for_group(..., polling=[consumer])``).

kafka-python joins, syncs and heartbeats only inside ``KafkaConsumer.poll()``, and confluent-kafka
delivers its assignment from ``Consumer.poll()``: a test that waits for a group without polling waits
forever. A poller calls ``poll`` with a short timeout on each round of the wait; records it happens
to fetch are given back by seeking the consumer to the first of them (``seek`` is public in
kafka-python 2.x and 3.x and in confluent-kafka), so the test still reads every record itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

Poller = Callable[[float], None]  # one round: poll for at most this many seconds


def pollers(consumers: Iterable[Any]) -> list[Poller]:
    """A poller per consumer: kafka-python, confluent-kafka, or any callable taking no argument."""
    return [_poller(consumer) for consumer in consumers]


def _poller(consumer: Any) -> Poller:
    if _is_instance(consumer, "confluent_kafka", "Consumer"):
        return lambda seconds: _poll_confluent(consumer, seconds)
    if _is_instance(consumer, "kafka", "KafkaConsumer"):
        return lambda seconds: _poll_kafka_python(consumer, seconds)
    if callable(consumer):
        return lambda _seconds: consumer()
    raise TypeError(f"polling= takes kafka-python or confluent-kafka consumers or callables, not {consumer!r}")


def _is_instance(consumer: Any, package: str, name: str) -> bool:
    """An instance (or a subclass's) of a client class, looked up only if the user's code imported the client."""
    module = sys.modules.get(package)
    cls = getattr(module, name, None) if module is not None else None
    return isinstance(cls, type) and isinstance(consumer, cls)


def _poll_kafka_python(consumer: Any, seconds: float) -> None:
    # poll(timeout_ms=...) and seek(partition, offset) have the same meaning in kafka-python 2.x and 3.x
    fetched = consumer.poll(timeout_ms=max(1, int(seconds * 1000)))
    for partition, records in fetched.items():
        if records:
            consumer.seek(partition, records[0].offset)


def _poll_confluent(consumer: Any, seconds: float) -> None:
    message = consumer.poll(seconds)
    if message is None or message.error() is not None:
        return
    from confluent_kafka import TopicPartition

    consumer.seek(TopicPartition(message.topic(), message.partition(), message.offset()))
