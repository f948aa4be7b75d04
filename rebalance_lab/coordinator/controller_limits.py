"""The KRaft controller's bound on one operation: at most 10,000 metadata records (issue 17, defect 2).

Kafka 4.4.0's ``QuorumController.MAX_RECORDS_PER_USER_OP`` is 10,000, and two checks enforce it on
CreateTopics and CreatePartitions (read in the 4.4.0 jars, confirmed on the broker by
``integration/test_kafka_limits.py``):

* ``ReplicationControlManager.validateTotalNumberOfPartitions`` sums the partitions a request asks
  for before anything else and fails the whole request with POLICY_VIOLATION "Excessively large
  number of partitions per request." (CreatePartitions: "... additional partitions ...");
* the records of the topics that would be created go into a ``BoundedList`` of 10,000; one more
  (a TopicRecord per topic, a PartitionRecord per partition, a ConfigRecord per config) throws
  ``BoundedListTooLongException``, which ``EventHandlerExceptionInfo`` turns into POLICY_VIOLATION
  "Unable to perform excessively large batch operation." for the whole request, validate-only too.

Kafka 3.9.2 (the ``kafka-3`` flavor) answers CreateTopics the same way; its CreatePartitions has only
the record bound (each new partition is one PartitionRecord).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rebalance_lab.config import Flavor

MAX_RECORDS_PER_USER_OP = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_ADDITIONAL_PARTITIONS = "Excessively large number of additional partitions per request."
BATCH_TOO_LARGE = "Unable to perform excessively large batch operation."


def requested_partitions(topics: Iterable[Any], default_partitions: int) -> int:
    """``validateTotalNumberOfPartitions`` for CreateTopics: the partitions a request asks for.

    Manual assignments count one each; -1 counts ``num.partitions``; zero or other negatives count
    nothing (they fail on their own later).
    """
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def create_topics_error(topics: list[Any], default_partitions: int) -> str | None:
    """The message failing a whole CreateTopics request before any topic is looked at, or None."""
    if requested_partitions(topics, default_partitions) > MAX_RECORDS_PER_USER_OP:
        return TOO_MANY_PARTITIONS
    return None


def creation_records(partitions: int, configs: int) -> int:
    """The metadata records creating one topic writes: TopicRecord, PartitionRecords, ConfigRecords."""
    return 1 + partitions + configs


def additional_partitions(topics: Iterable[Any], current: dict[str, int]) -> int:
    """``validateTotalNumberOfPartitions`` for CreatePartitions: the increases of existing topics.

    ``current`` has the partition count of every existing topic named; unknown topics, negative
    counts and counts that are not increases add nothing.
    """
    total = 0
    for topic in topics:
        if topic.count < 0 or topic.name not in current:
            continue
        total += max(0, topic.count - current[topic.name])
    return total


def create_partitions_error(flavor: Flavor, topics: list[Any], current: dict[str, int]) -> str | None:
    """The message failing a whole CreatePartitions request (Kafka 4.x), or None."""
    if flavor == Flavor.KAFKA_3 or additional_partitions(topics, current) <= MAX_RECORDS_PER_USER_OP:
        return None
    return TOO_MANY_ADDITIONAL_PARTITIONS


class RecordBudget:
    """Kafka 3.9.2's CreatePartitions: one ``BoundedList`` of records filled topic by topic.

    The topic whose new partitions overflow it fails with UNKNOWN_SERVER_ERROR and no message (the
    exception is caught per topic); the list is then full, so every later increase fails too.
    Checked on 3.9.2: +10,001 partitions, and 5,999 then 5,998 more in one request (the second fails).
    """

    def __init__(self) -> None:
        self.left = MAX_RECORDS_PER_USER_OP

    def take(self, records: int) -> bool:
        if records > self.left:
            self.left = 0
            return False
        self.left -= records
        return True
