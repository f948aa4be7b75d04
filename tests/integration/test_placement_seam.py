"""Topic creation places replicas with Kafka's own placers, chosen by flavor (spec/assignors.md §9)."""

from __future__ import annotations

from rebalance_lab.clients import placement
from rebalance_lab.clients.java_random import JavaRandom
from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.cluster import BrokerInfo, ClusterMetadata, placement_algorithm

BROKERS = [BrokerInfo(i, "127.0.0.1", 9092 + i, rack) for i, rack in enumerate(["a", "b", "c", "a", "b", "c"])]


def _expected(algorithm: str, seed: int, counts: list[int]) -> list[list[list[int]]]:
    rng = JavaRandom(seed)
    brokers = [placement.BrokerInfo(b.node_id, b.rack) for b in BROKERS]
    return [placement.place_replicas(brokers, n, 3, algorithm=algorithm, rng=rng) for n in counts]  # type: ignore[arg-type]


def test_each_flavor_picks_its_placer_unless_one_is_named() -> None:
    assert placement_algorithm(EmulatorConfig(flavor=Flavor.KAFKA_4)) == "striped"
    assert placement_algorithm(EmulatorConfig(flavor=Flavor.KAFKA_3)) == "adminutils"
    assert placement_algorithm(EmulatorConfig(flavor=Flavor.KAFKA_3, placement="striped")) == "striped"


def test_created_topics_get_the_replicas_kafkas_placer_gives_with_one_long_lived_random() -> None:
    for flavor, algorithm in ((Flavor.KAFKA_4, "striped"), (Flavor.KAFKA_3, "adminutils")):
        cluster = ClusterMetadata(EmulatorConfig(flavor=flavor, seed=11), BROKERS)
        got = [[p.replicas for p in cluster.create_topic(name, n, 3).partitions] for name, n in (("x", 5), ("y", 7))]
        assert got == _expected(algorithm, 11, [5, 7])
