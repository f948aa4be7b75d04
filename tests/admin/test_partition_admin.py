"""ElectLeaders and partition reassignments on several emulated brokers (a one-broker real broker cannot
show them): confluent-kafka's AdminClient moves replicas, and leadership comes back to the preferred
replica after a broker restart, as on a Kafka cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rebalance_lab.api import Emulator
from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection

_AR = codec.request_type(45)


@pytest.fixture()
def cluster() -> Iterator[Emulator]:
    with Emulator(port=0, brokers=3, initial_rebalance_delay_ms=0, seed=7) as emu:
        yield emu


async def _reassign(bootstrap: str, topic: str, partition: int, replicas: list[int]) -> list[Any]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = await RawConnection.open(host, int(port))
    try:
        shape = _AR.ReassignableTopic
        moved = await conn.request(45, 0, timeout_ms=5_000, topics=[shape(name=topic, partitions=[
            shape.ReassignablePartition(partition_index=partition, replicas=replicas)])])
        listed = await conn.request(46, 0, timeout_ms=5_000, topics=None)
    finally:
        await conn.close()
    return [(moved.error_code, moved.error_message),
            *[(t.name, p.partition_index, p.error_code, p.error_message)
              for t in moved.responses for p in t.partitions],
            (listed.error_code, listed.error_message, list(listed.topics))]


def _partitions(admin: AdminClient, topic: str) -> list[tuple[int, list[int], list[int]]]:
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return [(p.leader.id if p.leader else -1, [r.id for r in p.replicas], [r.id for r in p.isr])
            for p in described.partitions]


def test_a_reassignment_moves_the_replicas_and_a_leader_outside_the_new_set(cluster: Emulator) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("moved", 1, replica_assignment=[[0, 1]])])["moved"].result(10)
    answer = asyncio.run(_reassign(cluster.bootstrap_servers, "moved", 0, [2, 1]))  # confluent-kafka 2.16 lacks it
    assert answer == [(0, None), ("moved", 0, 0, None), (0, None, [])]  # done, and none left in progress
    assert _partitions(admin, "moved") == [(2, [2, 1], [2, 1])]


def test_preferred_election_brings_leadership_back_after_a_broker_restart(cluster: Emulator) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("elected", 1, replica_assignment=[[1, 2]])])["elected"].result(10)
    cluster.broker_down(1)
    cluster.broker_up(1)
    assert _partitions(admin, "elected")[0][0] == 2  # leadership moved to 2 and stayed there
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("elected", 0)]).result(10)
    assert result[TopicPartition("elected", 0)] is None  # elected, no error
    assert _partitions(admin, "elected")[0][0] == 1
    again = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("elected", 0)]).result(10)
    assert again[TopicPartition("elected", 0)].code() == 84  # ELECTION_NOT_NEEDED


def test_an_unclean_election_is_never_needed_since_a_returning_replica_is_in_sync_at_once(cluster: Emulator) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("unclean", 1, replica_assignment=[[1, 2]])])["unclean"].result(10)
    cluster.broker_down(2)  # 2 leaves the ISR
    cluster.broker_down(1)  # the last in-sync replica: no leader
    assert _partitions(admin, "unclean")[0][0] == -1
    cluster.broker_up(2)  # a returning replica catches up at once here (FIDELITY.md), so it is in sync and leads
    assert _partitions(admin, "unclean")[0][0] == 2
    result = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition("unclean", 0)]).result(10)
    assert result[TopicPartition("unclean", 0)].code() == 84
