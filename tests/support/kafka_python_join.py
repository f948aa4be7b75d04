"""A kafka-python consumer that knows its topics' partitions before it first joins a group.

kafka-python 3.0.12 loses a leader's assignment in one race: a leader that joins before its subscribed topic's
metadata has arrived assigns nothing, rejoins as soon as that metadata arrives, and its ``_perform_assignment`` for
the rejoin makes ``need_rejoin()`` false; if a ``poll(timeout_ms=...)`` ends between that rejoin's JoinGroup answer
and its SyncGroup answer, no later poll awaits the finished join task (``coordinator/base.py``
``join_group_async``), so the assignment is never applied and the member may stop heartbeating. Against a
coordinator that answers a join in a few milliseconds (the emulator, a broker with
``group.initial.rebalance.delay.ms=0``) a loaded CI machine hits it now and then; any poll shorter than a join
(a join waits for every member, so seconds in a group) can. Fetching the topics' partitions before the first poll
removes the race: the first join already has the metadata, so there is no rejoin
(rebalance_lab/client_polling.py does the same for ``wait_for_group(polling=)``; proven by
tests/integration/test_kafka_python_join_helper.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

_RETRY_S = 0.05  # a topic created a moment ago may not be in the first metadata answer yet


def know_partitions_before_joining(consumer: Any, topics: Iterable[str] | None = None,
                                   timeout_s: float = 30.0) -> dict[str, set[int]]:
    """Block until kafka-python knows the partitions of ``topics`` (default: the consumer's subscription), and
    return them. Call it after ``subscribe`` (or the constructor's topics) and before the first ``poll``, or
    before ``subscribe`` with the topics named. Raises AssertionError naming the topic if one is still unknown
    after ``timeout_s`` (``partitions_for_topic`` fetches all topics' metadata: it never creates one)."""
    names = sorted(consumer.subscription() or ()) if topics is None else sorted(topics)
    deadline = time.monotonic() + timeout_s
    known: dict[str, set[int]] = {}
    for topic in names:
        while not (partitions := consumer.partitions_for_topic(topic)):
            if time.monotonic() >= deadline:
                raise AssertionError(f"kafka-python did not learn the partitions of topic {topic!r} "
                                     f"within {timeout_s} s")
            time.sleep(_RETRY_S)
        known[topic] = set(partitions)
    return known
