"""Replica placement vs AdminUtils (server-common 3.9.2) and StripedReplicaPlacer (metadata 4.4.0)."""

from __future__ import annotations

import random

import pytest

from tests.differential_java import java_cases
from tests.differential_java.python_side import run_placement_case
from tests.differential_java.report import check_against_java
from tests.java_oracle import JavaOracle

pytestmark = pytest.mark.java


@pytest.mark.parametrize("chunk", range(3))
def test_adminutils_placement_matches_kafka_for_random_brokers_and_racks(java_oracle: JavaOracle, chunk: int) -> None:
    rng = random.Random(9100 + chunk)
    cases = [java_cases.adminutils_case(rng) for _ in range(500)]
    check_against_java(java_oracle, cases, run_placement_case)


@pytest.mark.parametrize("chunk", range(3))
def test_striped_placement_matches_kafka_for_random_brokers_racks_and_fencing(
    java_oracle: JavaOracle, chunk: int
) -> None:
    rng = random.Random(9200 + chunk)
    cases = [java_cases.striped_case(rng) for _ in range(500)]
    check_against_java(java_oracle, cases, run_placement_case)
