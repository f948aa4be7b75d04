"""murmur2, keyed partitioning, RoundRobinPartitioner and Java HashMap order vs Kafka 4.4.0."""

from __future__ import annotations

import random

import pytest

from tests.differential_java import java_cases
from tests.differential_java.python_side import run_producer_case
from tests.differential_java.report import check_against_java
from tests.java_oracle import JavaOracle

pytestmark = pytest.mark.java


def test_murmur2_matches_kafka_for_random_keys(java_oracle: JavaOracle) -> None:
    rng = random.Random(2024_01)
    cases = [java_cases.murmur2_case(rng) for _ in range(3000)]
    check_against_java(java_oracle, cases, run_producer_case)


def test_keyed_partition_matches_kafka_for_random_keys_and_counts(java_oracle: JavaOracle) -> None:
    rng = random.Random(2024_02)
    cases = [java_cases.partition_case(rng) for _ in range(2000)]
    check_against_java(java_oracle, cases, run_producer_case)


def test_round_robin_partitioner_matches_kafka_with_unavailable_partitions(java_oracle: JavaOracle) -> None:
    rng = random.Random(2024_03)
    cases = [java_cases.roundrobin_partitioner_case(rng) for _ in range(200)]
    check_against_java(java_oracle, cases, run_producer_case)


def test_hashmap_put_order_model_matches_java_hashmap(java_oracle: JavaOracle) -> None:
    """The model behind the placer's rack map order (spec §5.8), up to 300 keys."""
    rng = random.Random(2024_04)
    cases = []
    for _ in range(300):
        style = rng.choice(["rack-{}", "member-{}", "{}", "c{:02d}", "us-east-{}x"])
        keys = [style.format(i) for i in rng.sample(range(1000), rng.randint(0, rng.choice([5, 20, 300])))]
        cases.append({"kind": "hashmap_order", "keys": keys})
    check_against_java(java_oracle, cases, run_producer_case)
