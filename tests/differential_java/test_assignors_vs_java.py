"""The four consumer assignors vs kafka-clients 4.4.0, list order included.

* 5,200 seeded random groups (1,300 per assignor, in chunks of 100): equal and unequal
  subscriptions, missing topics, consumer and partition racks, static members, owned
  partitions with generations and double claims (equal or different generations), 1-50
  members, up to 500 partitions;
* about 600 sticky / cooperative-sticky follow-up rebalances whose owned partitions are
  Java's own previous answer, after members left and joined;
* 600 sticky / cooperative-sticky groups with claims beyond a topic's partition count.

A Java exception (e.g. spec Q5's NullPointerException) must be matched by a Python
exception. A test is skipped while no Python assignor of that name exists. A failure prints
replayable case JSON, and the first mismatching case shrunk.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.differential_java import java_cases
from tests.differential_java.python_side import find_assignor_factory, run_assign_case
from tests.differential_java.report import check_against_java
from tests.java_oracle import JavaOracle

pytestmark = pytest.mark.java

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
CHUNK = 100
CHUNKS = int(os.environ.get("REBALANCE_LAB_JAVA_ASSIGN_CHUNKS", "13"))


def cases_for(assignor: str, chunk: int) -> list[dict[str, object]]:
    rng = random.Random(f"{assignor}/{chunk}")
    return [java_cases.assign_case(rng, assignor) for _ in range(CHUNK)]


@pytest.mark.parametrize("chunk", range(CHUNKS))
@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_assignor_matches_kafka_on_random_groups(java_oracle: JavaOracle, assignor: str, chunk: int) -> None:
    factory = find_assignor_factory(assignor)
    check_against_java(java_oracle, cases_for(assignor, chunk), lambda case: run_assign_case(factory, case))


@pytest.mark.parametrize("chunk", range(3))
@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_assignor_matches_kafka_on_the_rebalance_after_a_membership_change(
    java_oracle: JavaOracle, assignor: str, chunk: int
) -> None:
    """Owned partitions taken from Java's own previous answer, then members leave and join."""
    factory = find_assignor_factory(assignor)
    rng = random.Random(f"follow-up/{assignor}/{chunk}")
    fresh = [java_cases.assign_case(rng, assignor) for _ in range(CHUNK)]
    for case in fresh:
        for member in case["members"]:  # start from a group without history
            member.update(owned=[], generation=None, user_data=None)
    previous = java_oracle.run_many(fresh)
    follow_ups = [
        java_cases.follow_up_case(rng, case, result)
        for case, result in zip(fresh, previous, strict=True)
        if isinstance(result, dict)
    ]
    check_against_java(java_oracle, follow_ups, lambda case: run_assign_case(factory, case))


@pytest.mark.parametrize("chunk", range(3))
@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_assignor_matches_kafka_when_members_claim_partitions_beyond_the_topic_size(
    java_oracle: JavaOracle, assignor: str, chunk: int
) -> None:
    """Owned partitions that no longer exist (topic re-created smaller): Java keeps them."""
    factory = find_assignor_factory(assignor)
    rng = random.Random(f"stale/{assignor}/{chunk}")
    cases = [java_cases.assign_case(rng, assignor, stale_claims=True) for _ in range(CHUNK)]
    check_against_java(java_oracle, cases, lambda case: run_assign_case(factory, case))
