"""The KIP-848 server-side assignors vs kafka-group-coordinator 4.4.0's ``UniformAssignor``/``RangeAssignor``.

About 3,600 seeded cases: 1,200 group histories (900 starting on ``uniform``, 300 on ``range``) of
2-4 target computations each, where each round's current targets are Java's previous answer
(recomputation from a previous target assignment). Homogeneous and heterogeneous groups of 1-40
members, 1-10 topics of 0-64 partitions (some with partition racks, members with racks), static
members restarting under their instance id, empty subscriptions, names of missing topics, joins,
leaves, subscription changes, partitions added, topics created and deleted, the assignor switched;
4% of the cases also subscribe a member to a topic id the metadata lacks, where both sides must
fail with the same message.

Outputs are compared as sets per member and topic; then, for the members whose partitions changed,
the record order (the order of the topics and partitions in the target-assignment record Kafka
writes for them, which is what the next round's stickiness reads) is compared too. A failure prints
replayable cases and the first one shrunk.
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from rebalance_lab.coordinator.consumer.assignors import AssignorError
from rebalance_lab.coordinator.consumer.assignors.java_order import TimelineKeyOrder
from tests.differential_java import server_assign_cases as cases
from tests.differential_java.shrink import shrink_greedy
from tests.java_oracle import JavaOracle, OracleError, minimal_case_json

pytestmark = pytest.mark.java

SCENARIOS_PER_CHUNK = 50
CHUNKS = {"uniform": 18, "range": 6}
SCALE = float(os.environ.get("REBALANCE_LAB_JAVA_SERVER_ASSIGN_SCALE", "1"))
ERROR_RATE = 0.04
_SHOWN = 3

Case = dict[str, Any]


def histories(oracle: JavaOracle, rng: random.Random, assignor: str, count: int) -> list[tuple[Case, Any]]:
    """Run ``count`` scenarios through Java round by round; every (case, Java answer)."""
    scenarios = [cases.new_scenario(rng, assignor) for _ in range(count)]
    rounds = [rng.randint(2, 4) for _ in scenarios]
    runs: list[tuple[Case, Any]] = []
    for r in range(4):
        active = [s for s, n in zip(scenarios, rounds, strict=True) if n > r]
        for scenario in active if r else ():
            cases.evolve(scenario)
        batch = [s.case() for s in active]
        batch = [cases.with_unknown_topic(rng, c) if rng.random() < ERROR_RATE else c for c in batch]
        answers = oracle.run_many(batch)
        for scenario, case, answer in zip(active, batch, answers, strict=True):
            scenario.settle(case, answer)
            runs.append((case, answer))
    return runs


def outcome(case: Case) -> Any:
    try:
        return cases.run_python(case)
    except Exception as exc:  # an outcome like any other
        return exc


def same_sets(case: Case, java: Any, mine: Any) -> bool:
    """Equal partitions per member and topic; a Java PartitionAssignorException needs our AssignorError
    with the same message."""
    if isinstance(java, OracleError):
        return (
            isinstance(mine, AssignorError)
            and java.java_type == "PartitionAssignorException"
            and str(mine) == java.java_message
        )
    return not isinstance(mine, Exception) and cases.normalised(java) == cases.normalised(mine)


def same_record_order(case: Case, java: Any, mine: Any) -> bool:
    """The same record for every member whose partitions changed (only those get a record)."""
    if isinstance(java, OracleError):
        return True
    before = {m["id"]: cases.normalised({"_": m["assignment"]}).get("_", {}) for m in case["members"]}
    changed = [m for m, record in java.items() if cases.normalised({"_": record}).get("_", {}) != before[m]]
    return all(java[m] == mine.get(m, []) for m in changed)


Agreement = Callable[[Case, Any, Any], bool]


def check(oracle: JavaOracle, runs: list[tuple[Case, Any]], agree: Agreement, what: str) -> None:
    mismatches = [(c, j, m) for c, j in runs if not agree(c, j, m := outcome(c))]
    if not mismatches:
        return
    lines = [f"{len(mismatches)} of {len(runs)} cases differ from Kafka 4.4.0 ({what}); first {_SHOWN}:"]
    for case, java, mine in mismatches[:_SHOWN]:
        lines += [f"case:   {minimal_case_json(case)}", f"java:   {_render(java)}", f"python: {_render(mine)}", ""]
    small = shrink(mismatches[0][0], lambda c: not agree(c, oracle.run_many([c])[0], outcome(c)))
    lines += ["first case shrunk:", f"case:   {minimal_case_json(small)}",
              f"java:   {_render(oracle.run_many([small])[0])}", f"python: {_render(outcome(small))}"]
    pytest.fail("\n".join(lines), pytrace=False)


def _render(value: Any) -> str:
    if isinstance(value, OracleError):
        return f"Java threw {value}"
    if isinstance(value, Exception):
        return f"Python raised {type(value).__name__}: {value}"
    return json.dumps(value, separators=(",", ":"))


def shrink(case: Case, still_fails: Callable[[Case], bool], budget: int = 300) -> Case:
    """Drop members, then assignment entries, while the case still fails."""
    return shrink_greedy(case, _smaller, still_fails, budget)


def _smaller(case: Case) -> Any:
    for i in range(len(case["members"])):
        if len(case["members"]) > 1:
            smaller = copy.deepcopy(case)
            del smaller["members"][i]
            yield smaller
    for i, member in enumerate(case["members"]):
        for j in range(len(member["assignment"])):
            smaller = copy.deepcopy(case)
            del smaller["members"][i]["assignment"][j]
            yield smaller


@pytest.mark.parametrize(
    ("assignor", "chunk"), [(a, c) for a, n in CHUNKS.items() for c in range(max(1, round(n * SCALE)))]
)
def test_server_assignor_matches_kafka_over_group_histories(java_oracle: JavaOracle, assignor: str, chunk: int) -> None:
    runs = histories(java_oracle, random.Random(f"server/{assignor}/{chunk}"), assignor, SCENARIOS_PER_CHUNK)
    check(java_oracle, runs, same_sets, "partitions per member and topic")
    check(java_oracle, runs, same_record_order, "record order")


def test_timeline_hash_map_order_matches_kafka(java_oracle: JavaOracle) -> None:
    """The consumer group's member map (``TimelineHashMap``) iterates as :class:`TimelineKeyOrder` says."""
    rng = random.Random("timeline")
    batch = []
    for _ in range(300):
        keys = [cases.kafka_uuid(rng) if rng.random() < 0.5 else f"member-{i}" for i in range(rng.randint(0, 60))]
        ops = []
        for key in keys:
            ops.append(["put", key])
            if ops and rng.random() < 0.3:
                ops.append(["remove", rng.choice(ops)[1]])
        batch.append({"kind": "timeline_order", "ops": ops})
    for case, java in zip(batch, java_oracle.run_many(batch), strict=True):
        order = TimelineKeyOrder()
        for op, key in case["ops"]:
            order.put(key) if op == "put" else order.remove(key)
        assert list(order) == java, minimal_case_json(case)
