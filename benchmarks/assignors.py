"""Assignor timings: our Python ports, Kafka's Java assignors and kafka-python's sticky assignor.

    python benchmarks/assignors.py                 # every scenario (several minutes)
    python benchmarks/assignors.py --quick         # sizes divided by 10, no kafka-python
    python benchmarks/assignors.py --only kp10k    # one scenario

Sizes are those of Kafka's own large assignor tests (spec assignors.md §6.6 and §6.10):

* ``uniform-1M`` - ``testLargeAssignmentAndGroupWithUniformSubscription`` (@Timeout(30)): 2,000
  consumers, 500 topics x 2,000 partitions, no racks; a fresh assignment, then consumers 1..1999
  re-subscribe with what they got (generation 1; consumer 0 keeps its ownerless subscription)
  and the group is assigned again.
* ``nonequal-1M`` - ``testLargeAssignmentAndGroupWithNonEqualSubscription`` (@Timeout(90)): the
  same, but the last consumer subscribes only to the first topic (the general builder).
* ``nonequal-20k`` - ``testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout`` (@Timeout(90)):
  500 consumers, 100 topics x 200 partitions; consumers with i % 4 == 0 take the first half of
  the topics, the others the second half; two passes as above.
* ``kp10k`` - 10,000 partitions (10 topics x 1,000) and 200 consumers, uniform, fresh: the size
  at which spec §6.10 quotes kafka-python's ``StickyPartitionAssignor``.

Both passes run for ``sticky`` (previous ownership in StickyAssignor user data V1, as Kafka's
eager tests build it) and ``cooperative-sticky`` (owned partitions + protocol generation).
Kafka's time limits cover a whole test (both passes plus building the inputs), so the table
compares the *sum* of both passes with the limit.

Python: timed as Java is, ``--java-repeat`` runs per input with a fresh assignor each, "cold"
the first and "warm" the best of the rest; like is compared with like (cold/cold, warm/warm).
Only ``assign(cluster, group)`` is timed. A full ``gc.collect()``
runs just before, so that a collection falling inside the timed call does not also sweep what
the harness allocated (Java's decoded answers, the previous pass's result: millions of
``TopicPartition``s, which CPython never untracks); whatever collection the assignor's own
allocations cause stays inside the timed call (a result of 100,000 partitions or more is handed
straight to the collector's oldest generation, see ``common.gc_paused``, and is not swept then). Java: the oracle driver
(tests/java, kafka-clients 4.4.0) times ``assignor.assign(cluster, groupSubscription)`` inside
the JVM with ``System.nanoTime`` (kind ``assign_timed``), fresh assignor per run; "cold" is the
first run in the JVM for that input, "warm" the best of the rest. Results of Python and Java are
compared for equality (exact lists). kafka-python runs in a subprocess with a timeout.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rebalance_lab.clients.assignors import (  # noqa: E402
    ClusterView,
    GroupSubscription,
    Subscription,
    TopicPartition,
    get_assignor,
)
from rebalance_lab.protocol import consumer_protocol  # noqa: E402

Lists = dict[str, list[TopicPartition]]


# --------------------------------------------------------------------------- inputs


def canonical(prefix: str, i: int, max_num: int) -> str:
    """Kafka's test names: prefix + i zero-padded to the digits of max_num (``t0001``, ``c0042``)."""
    return prefix + str(i).zfill(len(str(max_num)))


@dataclass
class Scenario:
    key: str
    kafka_test: str
    limit_s: float | None
    consumers: int
    topics: int
    partitions: int
    subscriptions: Callable[[list[str], int, int], list[str]]
    two_passes: bool = True
    assignors: tuple[str, ...] = ("sticky", "cooperative-sticky")
    notes: list[str] = field(default_factory=list)

    @property
    def total_partitions(self) -> int:
        return self.topics * self.partitions

    def topic_names(self) -> list[str]:
        return [canonical("t", i, self.topics) for i in range(self.topics)]

    def consumer_names(self) -> list[str]:
        return [canonical("c", i, self.consumers) for i in range(self.consumers)]

    def subscribed(self) -> dict[str, list[str]]:
        topics = self.topic_names()
        return {c: self.subscriptions(topics, i, self.consumers) for i, c in enumerate(self.consumer_names())}


def _all(topics: list[str], i: int, n: int) -> list[str]:
    return topics


def _last_takes_first(topics: list[str], i: int, n: int) -> list[str]:
    return topics[:1] if i == n - 1 else topics


def _quarter_split(topics: list[str], i: int, n: int) -> list[str]:
    half = len(topics) // 2
    return topics[:half] if i % 4 == 0 else topics[half:]


def scenarios(scale: int) -> list[Scenario]:
    def s(n: int) -> int:
        return max(1, n // scale)

    return [
        Scenario("uniform-1M", "testLargeAssignmentAndGroupWithUniformSubscription", 30.0,
                 s(2000), s(500), 2000 if scale == 1 else s(2000), _all),
        Scenario("nonequal-1M", "testLargeAssignmentAndGroupWithNonEqualSubscription", 90.0,
                 s(2000), s(500), 2000 if scale == 1 else s(2000), _last_takes_first),
        Scenario("nonequal-20k", "testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout", 90.0,
                 s(500), s(100), 200, _quarter_split),
        Scenario("kp10k", "(spec §6.10: kafka-python sticky, 10,000 x 200)", None,
                 s(200), 10, s(1000), _all, two_passes=False, assignors=("sticky",)),
    ]


def fresh_group(sc: Scenario) -> GroupSubscription:
    return GroupSubscription({c: Subscription(tuple(t)) for c, t in sc.subscribed().items()})


def second_pass_group(sc: Scenario, assignor: str, first: Lists) -> GroupSubscription:
    """Kafka's ``buildSubscriptionV2Above(topics, assignment, generation 1, i)`` for consumers
    1..n-1; consumer 0 keeps its first, ownerless subscription."""
    members: dict[str, Subscription] = {}
    for i, (c, topics) in enumerate(sc.subscribed().items()):
        if i == 0:
            members[c] = Subscription(tuple(topics))
            continue
        owned = tuple(first.get(c, ()))
        if assignor == "sticky":
            members[c] = Subscription(tuple(topics), user_data=consumer_protocol.encode_sticky_user_data(owned, 1),
                                      generation_id=1)
        else:
            members[c] = Subscription(tuple(topics), owned_partitions=owned, generation_id=1)
    return GroupSubscription(members)


# --------------------------------------------------------------------------- runners


def run_python(assignor: str, cluster: ClusterView, group: GroupSubscription,
               repeat: int) -> tuple[list[float], Lists]:
    """``repeat`` timed runs, each with a fresh assignor (first = cold), and the first run's lists."""
    times: list[float] = []
    lists: Lists = {}
    for run in range(max(1, repeat)):
        instance = get_assignor(assignor)
        gc.collect()  # settle the harness's garbage first (see the module docstring)
        start = time.perf_counter()
        result = instance.assign(cluster, group)
        times.append(time.perf_counter() - start)
        if run == 0:
            lists = {m: list(a.partitions) for m, a in result.items()}
        del result
    return times, lists


def oracle_case(assignor: str, sc: Scenario, group: GroupSubscription, repeat: int) -> dict[str, Any]:
    members = []
    for member_id, sub in group.members.items():
        members.append({
            "id": member_id,
            "topics": list(sub.topics),
            "user_data": None if sub.user_data is None else sub.user_data.hex(),
            "owned": [[tp.topic, tp.partition] for tp in sub.owned_partitions],
            "generation": sub.generation_id,
            "rack": None,
            "instance_id": None,
        })
    return {
        "kind": "assign_timed",
        "assignor": assignor,
        "repeat": repeat,
        "brokers": [{"id": 0, "rack": None}],
        "topics": [{"name": t, "partitions": [[0]] * sc.partitions} for t in sc.topic_names()],
        "members": members,
    }


def run_java(oracle: Any, case: dict[str, Any]) -> tuple[list[float], Lists]:
    reply = oracle.run(case)
    times = [n / 1e9 for n in reply["nanos"]]
    lists = {m: [TopicPartition(t, p) for t, p in parts] for m, parts in reply["assignment"].items()}
    return times, lists


def _kafka_python_sticky(sc_key: str, scale: int, queue: Any) -> None:
    """In a child process: kafka-python's StickyPartitionAssignor on the scenario's fresh input."""
    from types import SimpleNamespace

    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    sc = next(x for x in scenarios(scale) if x.key == sc_key)
    counts = {t: sc.partitions for t in sc.topic_names()}

    class Cluster:
        def topics(self, exclude_internal_topics: bool = True) -> set[str]:
            return set(counts)

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            n = counts.get(topic)
            return None if n is None else set(range(n))

    members = [
        SimpleNamespace(member_id=c, group_instance_id=None,
                        metadata=SimpleNamespace(topics=topics, user_data=None, owned_partitions=[], generation_id=-1))
        for c, topics in sc.subscribed().items()
    ]
    start = time.perf_counter()
    result = StickyPartitionAssignor().assign(Cluster(), members)
    elapsed = time.perf_counter() - start
    assigned = sum(len(ps) for a in result.values() for _, ps in a.assigned_partitions)
    queue.put((elapsed, assigned))


def run_kafka_python(sc: Scenario, scale: int, timeout_s: float) -> tuple[float | None, str]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_kafka_python_sticky, args=(sc.key, scale, queue), daemon=True)
    proc.start()
    proc.join(timeout_s)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return None, f"> {timeout_s:.0f} s (stopped)"
    if queue.empty():
        return None, f"failed (exit code {proc.exitcode})"
    elapsed, assigned = queue.get()
    note = "" if assigned == sc.total_partitions else f" (assigned {assigned} of {sc.total_partitions})"
    return float(elapsed), note


# --------------------------------------------------------------------------- table


@dataclass
class Row:
    scenario: str
    assignor: str
    step: str
    python_s: float  # cold: the first run
    python_warm_s: float | None = None  # the best of the later runs
    java_cold_s: float | None = None
    java_warm_s: float | None = None
    equal: bool | None = None
    limit_s: float | None = None
    extra: str = ""


def fmt(v: float | None, unit: str = "s") -> str:
    if v is None:
        return "-"
    return f"{v:.3f}{unit}" if v < 10 else f"{v:.1f}{unit}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


HEADER = (f"{'scenario':<13} {'assignor':<18} {'step':<11} {'py cold':>8} {'py warm':>8} {'java cold':>9} "
          f"{'java warm':>9} {'cold/cold':>9} {'warm/warm':>9} {'equal':>5} {'limit':>6} {'within':>6}")


def row_line(r: Row) -> str:
    within = "-" if r.limit_s is None else ("yes" if r.python_s <= r.limit_s else "NO")
    eq = "-" if r.equal is None else ("yes" if r.equal else "NO")
    return (f"{r.scenario:<13} {r.assignor:<18} {r.step:<11} {fmt(r.python_s):>8} {fmt(r.python_warm_s):>8} "
            f"{fmt(r.java_cold_s):>9} {fmt(r.java_warm_s):>9} {ratio(r.python_s, r.java_cold_s):>9} "
            f"{ratio(r.python_warm_s, r.java_warm_s):>9} {eq:>5} {fmt(r.limit_s):>6} {within:>6}")


def print_table(rows: list[Row]) -> None:
    print(HEADER)
    print("-" * len(HEADER))
    for r in rows:
        print(row_line(r))


# --------------------------------------------------------------------------- main


def bench_scenario(sc: Scenario, oracle: Any, java_repeat: int, rows: list[Row]) -> None:
    counts = {t: sc.partitions for t in sc.topic_names()}
    cluster = ClusterView.of_counts(counts)
    print(f"# {sc.key}: {sc.consumers} consumers, {sc.topics} topics x {sc.partitions} partitions "
          f"= {sc.total_partitions:,} partitions ({sc.kafka_test})", flush=True)
    for assignor in sc.assignors:
        group = fresh_group(sc)
        py_total = 0.0
        py_warm_total: float | None = 0.0
        java_cold_total: float | None = 0.0
        java_warm_total: float | None = 0.0
        all_equal: bool | None = True
        first: Lists = {}
        for step in ("fresh", "with owned") if sc.two_passes else ("fresh",):
            if step == "with owned":
                group = second_pass_group(sc, assignor, first)
            py_times, ours = run_python(assignor, cluster, group, java_repeat)
            py_s, py_warm = py_times[0], (min(py_times[1:]) if len(py_times) > 1 else None)
            if step == "fresh":
                first = ours
            cold = warm = None
            equal = None
            if oracle is not None:
                times, java = run_java(oracle, oracle_case(assignor, sc, group, java_repeat))
                cold, warm = times[0], (min(times[1:]) if len(times) > 1 else None)
                equal = java == ours
            row = Row(sc.key, assignor, step, py_s, py_warm, cold, warm, equal)
            rows.append(row)
            print(row_line(row), flush=True)
            py_total += py_s
            py_warm_total = None if py_warm is None or py_warm_total is None else py_warm_total + py_warm
            java_cold_total = None if cold is None or java_cold_total is None else java_cold_total + cold
            java_warm_total = None if warm is None or java_warm_total is None else java_warm_total + warm
            all_equal = None if equal is None or all_equal is None else all_equal and equal
        if sc.two_passes:
            total = Row(sc.key, assignor, "both (test)", py_total, py_warm_total, java_cold_total, java_warm_total,
                        all_equal, sc.limit_s)
            rows.append(total)
            print(row_line(total), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes / 10 and no kafka-python")
    parser.add_argument("--only", action="append", help="scenario key (repeatable)")
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument("--no-kafka-python", action="store_true")
    parser.add_argument("--java-repeat", type=int, default=3,
                        help="timed runs per input, Python and Java alike (first = cold)")
    parser.add_argument("--kafka-python-timeout", type=float, default=900.0)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    chosen = [sc for sc in scenarios(scale) if not args.only or sc.key in args.only]

    print(f"Python {platform.python_version()} on {platform.machine()}, {mp.cpu_count()} CPUs; "
          f"scale 1/{scale}", flush=True)
    print(HEADER, flush=True)
    oracle = None
    if not args.no_java:
        from tests.java_oracle import JavaOracle

        oracle = JavaOracle.start()
    rows: list[Row] = []
    kp_lines: list[str] = []
    try:
        for sc in chosen:
            bench_scenario(sc, oracle, args.java_repeat, rows)
            if sc.key == "kp10k" and not args.no_kafka_python and not args.quick:
                kp_s, note = run_kafka_python(sc, scale, args.kafka_python_timeout)
                ours = next(r for r in rows if r.scenario == sc.key and r.assignor == "sticky")
                line = (f"kafka-python StickyPartitionAssignor, {sc.total_partitions:,} partitions x {sc.consumers} "
                        f"consumers (fresh): {fmt(kp_s) if kp_s is not None else note}{note if kp_s else ''}; "
                        f"ours {fmt(ours.python_s)} -> ours is {ratio(kp_s, ours.python_s)} faster"
                        f"; Java warm {fmt(ours.java_warm_s)}")
                kp_lines.append(line)
                print(line, flush=True)
    finally:
        if oracle is not None:
            oracle.close()

    print("\n== Summary ==")
    print_table(rows)
    for line in kp_lines:
        print(line)
    # The 3x goal is for the sizes of Kafka's own large tests (the scenarios with a time limit); kp10k is there
    # for the kafka-python comparison, a size at which fixed Python costs of a few milliseconds dominate.
    kafka_sizes = {r.scenario for r in rows if r.limit_s is not None}
    passes = [r for r in rows if r.step != "both (test)" and r.scenario in kafka_sizes]
    cold = [r.python_s / r.java_cold_s for r in passes if r.java_cold_s]
    warm = [r.python_warm_s / r.java_warm_s for r in passes if r.python_warm_s and r.java_warm_s]
    if cold:
        print(f"Kafka's test sizes, python/java per pass, first run each (cold/cold): "
              f"median {statistics.median(cold):.2f}x, max {max(cold):.2f}x")
    if warm:
        print(f"Kafka's test sizes, python/java per pass, best later run each (warm/warm): "
              f"median {statistics.median(warm):.2f}x, max {max(warm):.2f}x (goal: sticky within 3x of Java)")
    limited = [r for r in rows if r.limit_s is not None]
    if limited:
        ok = all(r.python_s <= (r.limit_s or 0) for r in limited)
        print(f"every two-pass test within Kafka's time limit: {'yes' if ok else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
