"""KIP-848 server assignor timings: our ``uniform`` (homogeneous) vs Kafka 4.4.0's ``UniformAssignor``.

    python benchmarks/server_assignors.py              # 1,000 and 5,000 members, with Java if available
    python benchmarks/server_assignors.py --no-java    # ours only
    python benchmarks/server_assignors.py --members 200 --repeat 3

The group: 100 topics x 50 partitions, every member subscribed to all of them (the homogeneous
builder). The core runs the assignor inside the heartbeat that bumps the group epoch, so what
matters is one recomputation from the stored target:

* ``fresh``: every member new (the first epoch of a group whose members all arrived together);
* ``join``: a stable group, one member joins (its members give up partitions to it);
* ``leave``: a stable group, one member left (its partitions go to the others);
* ``unchanged``: a stable group recomputed with nothing moved (an epoch bump that changes no target).

Python: ``assign(...)`` only, best of ``--repeat`` runs and the first. Java: the oracle driver
(tests/java, kafka-group-coordinator 4.4.0, kind ``server_assign_timed``) times
``UniformAssignor.assign(groupSpec, describer)`` inside the JVM on the same input; "first" includes
JIT warm-up. Both answers are compared (partitions per member) before timing is trusted.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rebalance_lab.coordinator.consumer.assignors import (  # noqa: E402
    MemberSubscription,
    PartitionSet,
    SubscriptionType,
    TopicMetadata,
    assign,
)
from rebalance_lab.coordinator.consumer.assignors.java_order import subscription_name_order, uuid_string  # noqa: E402

Group = tuple[dict[uuid.UUID, TopicMetadata], list[MemberSubscription]]


def image(topics: int, partitions: int) -> dict[uuid.UUID, TopicMetadata]:
    rng = random.Random(848)
    made = {}
    for i in range(topics):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        made[topic_id] = TopicMetadata(topic_id, f"topic-{i}", partitions)
    return made


def members(
    ids: list[str], meta: dict[uuid.UUID, TopicMetadata], targets: dict[str, dict[uuid.UUID, frozenset[int]]]
) -> list[MemberSubscription]:
    names = subscription_name_order([t.name for t in meta.values()])
    subscribed = frozenset(meta)
    return [MemberSubscription(m, None, None, subscribed, targets.get(m, {}), names) for m in ids]


def scenarios(size: int, meta: dict[uuid.UUID, TopicMetadata]) -> dict[str, list[MemberSubscription]]:
    ids = [f"{uuid_string(uuid.UUID(int=random.Random(i).getrandbits(128)))}" for i in range(size + 1)]
    stable = assign("uniform", members(ids[:size], meta, {}), SubscriptionType.HOMOGENEOUS, meta)
    return {
        "fresh": members(ids[:size], meta, {}),
        "join": members(ids[: size + 1], meta, stable),
        "leave": members(ids[1:size], meta, stable),
        "unchanged": members(ids[:size], meta, stable),
    }


def time_python(group: list[MemberSubscription], meta: dict[uuid.UUID, TopicMetadata], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        assign("uniform", group, SubscriptionType.HOMOGENEOUS, meta)
        times.append(time.perf_counter() - start)
    return times


def java_case(group: list[MemberSubscription], meta: dict[uuid.UUID, TopicMetadata]) -> dict[str, Any]:
    def record(m: MemberSubscription) -> list[Any]:
        return [[uuid_string(t), list(p.order if isinstance(p, PartitionSet) else sorted(p))]
                for t, p in m.assignment.items()]

    return {
        "kind": "server_assign",
        "assignor": "uniform",
        "subscription_type": "HOMOGENEOUS",
        "topics": [{"id": uuid_string(t), "name": m.name, "partitions": m.num_partitions} for t, m in meta.items()],
        "members": [{"id": m.member_id, "instance_id": None, "rack": None, "topics": list(m.subscription_order or ()),
                     "assignment": record(m)} for m in group],
    }


def same_answer(java: dict[str, Any], group: list[MemberSubscription], meta: dict[uuid.UUID, TopicMetadata]) -> bool:
    ours = assign("uniform", group, SubscriptionType.HOMOGENEOUS, meta)
    mine = {m: {uuid_string(t): sorted(p) for t, p in a.items() if p} for m, a in ours.items()}
    theirs = {m: {t: sorted(p) for t, p in r if p} for m, r in java.items()}
    return {m: a for m, a in mine.items() if a} == {m: a for m, a in theirs.items() if a}


def start_oracle() -> Any:
    try:
        from tests.java_oracle import JavaOracle, OracleUnavailable
    except ImportError:
        return None
    try:
        return JavaOracle.start()
    except OracleUnavailable as exc:
        print(f"(no Java: {exc})")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="*", default=[1000, 5000])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-java", action="store_true")
    args = parser.parse_args()
    meta = image(args.topics, args.partitions)
    oracle = None if args.no_java else start_oracle()
    shape = f"{args.topics} topics x {args.partitions} partitions"
    print(f"uniform, homogeneous, {shape}; ms (first / best of {args.repeat})")
    print(f"{'members':>8} {'scenario':<10} {'python':>17} {'java 4.4.0':>17}")
    try:
        for size in args.members:
            for name, group in scenarios(size, meta).items():
                ours = time_python(group, meta, args.repeat)
                line = f"{size:>8} {name:<10} {ours[0] * 1e3:>8.1f} / {min(ours) * 1e3:>6.1f}"
                if oracle is not None:
                    line += " " + java_timing(oracle, group, meta, args.repeat)
                print(line, flush=True)
    finally:
        if oracle is not None:
            oracle.close()


def java_timing(oracle: Any, group: list[MemberSubscription], meta: dict[uuid.UUID, TopicMetadata], repeat: int) -> str:
    case = java_case(group, meta)
    if not same_answer(oracle.run(case), group, meta):
        return "   answers differ!"
    nanos = oracle.run({**case, "kind": "server_assign_timed", "repeat": repeat})["nanos"]
    return f"{nanos[0] / 1e6:>8.1f} / {min(nanos) / 1e6:>6.1f}"


if __name__ == "__main__":
    main()
