"""tests/support/kafka_python_join: a kafka-python consumer polled with short polls keeps its assignment when it knows
its topic's partitions before its first poll (kafka-python 3.0.12's lost-rejoin race, made certain here by slow
Metadata and SyncGroup answers), and the helper names a topic it never learns."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer

from rebalance_lab.api import Emulator
from tests.support.kafka_python_join import know_partitions_before_joining

SHORT_POLL_MS = 100  # shorter than the slowed SyncGroup answer below: a poll ends between JoinGroup and SyncGroup


def _poll_until_assigned(consumer: KafkaConsumer, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=SHORT_POLL_MS)


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_a_short_polling_leader_that_learned_its_partitions_first_gets_its_assignment_in_one_join(
        rebalance_lab: Emulator) -> None:
    # Metadata answered after the first JoinGroup (600 ms) makes the leader assign nothing and rejoin; a SyncGroup
    # answer slower than a poll (300 ms) makes a poll end between the rejoin's JoinGroup and SyncGroup answers.
    # Without the helper the consumer never gets an assignment (checked by removing the call: it fails every time).
    rebalance_lab.add_latency(600, api="Metadata")
    rebalance_lab.add_latency(300, api="SyncGroup")
    consumer = KafkaConsumer("orders", group_id="g", bootstrap_servers=rebalance_lab.bootstrap_servers,
                             enable_auto_commit=False)
    try:
        assert know_partitions_before_joining(consumer) == {"orders": {0, 1, 2}}
        _poll_until_assigned(consumer, 15.0)
        assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1, 2]
        assert [entry["generation"] for entry in rebalance_lab.history("g")] == [1]  # one join, no rejoin
    finally:
        consumer.close()


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_the_join_helper_names_a_topic_whose_partitions_it_never_learns(rebalance_lab: Emulator) -> None:
    consumer = KafkaConsumer(bootstrap_servers=rebalance_lab.bootstrap_servers, group_id="g")
    try:
        with pytest.raises(AssertionError, match=r"did not learn the partitions of topic 'missing' within 0\.3 s"):
            know_partitions_before_joining(consumer, ["missing"], timeout_s=0.3)
    finally:
        consumer.close()
