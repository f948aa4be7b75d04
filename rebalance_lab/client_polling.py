"""Drive synchronous consumers while a test waits (``Emulator.wait_for_group(..., polling=[consumer])``).

kafka-python joins, syncs and heartbeats only inside ``KafkaConsumer.poll()``, and confluent-kafka
delivers its assignment from ``Consumer.poll()``: a test that waits for a group without polling waits
forever. A poller calls ``poll`` with a short timeout on each round of the wait; records it happens
to fetch are given back by seeking the consumer to the first of them (``seek`` is public in
kafka-python 2.x and 3.x and in confluent-kafka), so the test still reads every record itself.

While a wait lasts, each consumer is polled by a thread of its own (:class:`BackgroundPolling`), never in turns
from the waiting thread: kafka-python 3.0.12 drops a JoinGroup/SyncGroup round that completes between two
``poll()`` calls and sends a new JoinGroup (``join_group_async`` starts a new task when the previous one is
done), so consumers polled in turns, each idle while the others poll, rejoined over and over (a leader's rejoin
is a rebalance) and the group rarely settled. The test's thread is inside the wait until every poller thread has
stopped; only the test's ``until`` condition reads consumers meanwhile, and a confluent-kafka consumer's poll is
finished first (:meth:`BackgroundPolling.paused`): its ``assignment()`` waits for a lock that a poll running the
rebalance callback holds while that callback waits for the interpreter lock the caller holds.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any

Poller = Callable[[float], None]  # one round: poll for at most this many seconds


def pollers(consumers: Iterable[Any]) -> list[Poller]:
    """A poller per consumer: kafka-python, confluent-kafka, or any callable taking no argument."""
    return [_poller(consumer) for consumer in consumers]


def _poller(consumer: Any) -> Poller:
    if _is_instance(consumer, "confluent_kafka", "Consumer"):
        return lambda seconds: _poll_confluent(consumer, seconds)
    if _is_instance(consumer, "kafka", "KafkaConsumer"):
        return _kafka_python_poller(consumer)
    if callable(consumer):
        return lambda _seconds: consumer()
    raise TypeError(f"polling= takes kafka-python or confluent-kafka consumers or callables, not {consumer!r}")


def _is_instance(consumer: Any, package: str, name: str) -> bool:
    """An instance (or a subclass's) of a client class, looked up only if the user's code imported the client."""
    module = sys.modules.get(package)
    cls = getattr(module, name, None) if module is not None else None
    return isinstance(cls, type) and isinstance(consumer, cls)


def _kafka_python_poller(consumer: Any) -> Poller:
    known = False

    def poll(seconds: float) -> None:
        nonlocal known
        if not known:  # once, before the first poll this poller makes
            _learn_subscribed_partitions(consumer)
            known = True
        _poll_kafka_python(consumer, seconds)

    return poll


def _learn_subscribed_partitions(consumer: Any) -> None:
    """Have kafka-python fetch the subscribed topics' metadata before it joins. A leader of kafka-python 3.0.12 that
    joins before that metadata arrives assigns nothing, rejoins when it arrives, and its ``_perform_assignment``
    for the rejoin makes ``need_rejoin()`` false; if a ``poll()`` ends between that JoinGroup answer and the
    SyncGroup answer, no later poll awaits the finished join and its assignment is never applied
    (``coordinator/base.py`` ``join_group_async``). Against a coordinator that answers a join in a few
    milliseconds (the emulator, or a broker with ``group.initial.rebalance.delay.ms=0``) a loaded machine hits
    that now and then. ``partitions_for_topic`` blocks until the metadata is fetched (kafka-python 2.x and
    3.x); a topic that does not exist yet is simply not found, as before."""
    for topic in sorted(consumer.subscription() or ()):
        consumer.partitions_for_topic(topic)


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


_THREAD_ROUND_S = 0.1  # one poll() of a consumer's thread; the thread polls again at once


class BackgroundPolling:
    """Poll each consumer in a thread of its own until the ``with`` block ends; a callable is called by
    :meth:`round` from the waiting thread instead. A poll that raises stops its thread; :meth:`round` and the
    block's end raise it in the waiting thread."""

    def __init__(self, consumers: Iterable[Any]) -> None:
        items = list(consumers)
        self._calls = [c for c in items if callable(c) and not _is_consumer(c)]
        consumers = [c for c in items if _is_consumer(c)]
        for c in items:
            if not callable(c) and not _is_consumer(c):
                _poller(c)  # raises the TypeError that names what polling= takes
        self._threaded = [_poller(c) for c in consumers]
        # One lock per consumer, held while it polls; paused() takes those of confluent-kafka consumers.
        self._locks = [threading.Lock() for _ in consumers]
        self._pausable = [lock for c, lock in zip(consumers, self._locks, strict=True)
                          if _is_instance(c, "confluent_kafka", "Consumer")]
        self._stop = threading.Event()
        self._pause_wanted = threading.Event()  # a poller about to poll again lets paused() take its lock first
        self._errors: list[BaseException] = []
        self._threads = [threading.Thread(target=self._run, args=(poll, lock), daemon=True,
                                          name="rebalance-lab-poll")
                         for poll, lock in zip(self._threaded, self._locks, strict=True)]

    def __bool__(self) -> bool:
        return bool(self._calls or self._threaded)

    def __enter__(self) -> BackgroundPolling:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        if kind is None:
            self._raise_first()

    def round(self) -> None:
        """Call each callable once; raise what a consumer's poll raised."""
        self._raise_first()
        for call in self._calls:
            call()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No confluent-kafka consumer is inside ``poll()`` within the block (the test's condition reads them)."""
        if not self._pausable:
            yield
            return
        self._pause_wanted.set()
        try:
            with ExitStack() as stack:
                for lock in self._pausable:
                    stack.enter_context(lock)
                yield
        finally:
            self._pause_wanted.clear()

    def _run(self, poll: Poller, lock: threading.Lock) -> None:
        try:
            while not self._stop.is_set():
                if self._pause_wanted.is_set():  # a Lock is not fair: without this the poller could take it back
                    self._stop.wait(0.001)
                    continue
                with lock:
                    poll(_THREAD_ROUND_S)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            self._errors.append(exc)

    def _raise_first(self) -> None:
        if self._errors:
            raise self._errors[0]


def _is_consumer(consumer: Any) -> bool:
    return _is_instance(consumer, "confluent_kafka", "Consumer") or _is_instance(consumer, "kafka", "KafkaConsumer")
