"""Real kafka-python and aiokafka groups assign with our assignors through the adapters, and
get what Kafka's Java assignors compute for the same subscriptions.

Each group has three members on four topics with different partition counts, with equal
and unequal subscriptions. Whenever the group is Stable, the test takes the subscriptions the
leader saw (the chosen protocol's metadata of every member in the emulator's GroupView, in
member order) and runs Kafka's Java assignor on them through the oracle
(``tests/java_oracle.py``). The emulator's assignment bytes must equal Java's
``serializeAssignment`` of Java's result (same partitions, same order), and every client must
hold exactly its share. Sticky groups then lose a member, so the second assignment depends on
the user data carried over from the first; cooperative-sticky (kafka-python) gains a member
and goes through the two-phase handover.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.assignors import Assignment, TopicPartition, get_assignor
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.protocol import consumer_protocol
from tests.differential_java.python_side import build_inputs
from tests.java_oracle import JavaOracle, OracleUnavailable, minimal_case_json
from tests.support.kafka_python_join import know_partitions_before_joining

pytestmark = [pytest.mark.clients, pytest.mark.java]

TOPICS = {"alpha": 3, "beta": 5, "gamma": 2, "delta": 7}
EQUAL = [["alpha", "beta", "gamma"]] * 3
# The first member (the leader: it joins first and stays) subscribes to every topic, so its
# metadata covers the others' topics when it assigns.
UNEQUAL = [["alpha", "beta", "gamma", "delta"], ["alpha", "beta"], ["beta", "gamma", "delta"]]
FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 100}
DEADLINE_S = 40.0

Parts = list[tuple[str, int]]


@pytest.fixture(scope="module")
def java_oracle() -> Iterator[JavaOracle]:
    try:
        oracle = JavaOracle.start()
    except OracleUnavailable as exc:
        pytest.skip(f"Java oracle unavailable: {exc}")
    try:
        yield oracle
    finally:
        oracle.close()


def _emulator() -> Emulator:
    return Emulator(initial_rebalance_delay_ms=0, topics=list(TOPICS.items()))


# -- comparing one generation with Java ------------------------------------------------------


Layout = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # oracle "brokers", "topics"
DEFAULT_LAYOUT: Layout = ([{"id": 0, "rack": None}], [{"name": t, "partitions": [[0]] * n} for t, n in TOPICS.items()])


def java_case(view: GroupView, layout: Layout = DEFAULT_LAYOUT) -> dict[str, Any]:
    """The oracle case for the subscriptions the leader of this generation saw."""
    members = []
    for m in view.members:
        raw = next(p.metadata for p in m.protocols if p.name == view.protocol_name)
        sub = consumer_protocol.decode_subscription(raw)
        members.append({
            "id": m.member_id,
            "topics": list(sub.topics),
            "user_data": None if sub.user_data is None else sub.user_data.hex(),
            "owned": [[tp.topic, tp.partition] for tp in sub.owned_partitions],
            "generation": sub.generation_id,
            "rack": sub.rack_id,
            "instance_id": m.group_instance_id,
        })
    return {
        "kind": "assign",
        "assignor": view.protocol_name,
        "brokers": layout[0],
        "topics": layout[1],
        "members": members,
    }


def emulator_assignment(view: GroupView) -> dict[str, Parts]:
    return {
        m.member_id: [(tp.topic, tp.partition) for tp in consumer_protocol.decode_assignment(m.assignment).partitions]
        for m in view.members
    }


def check_against_java(oracle: JavaOracle, view: GroupView, layout: Layout = DEFAULT_LAYOUT) -> dict[str, Parts]:
    """The emulator holds, for every member, exactly Java's ``serializeAssignment`` bytes of
    Java's result for this generation's subscriptions. (Those bytes group a member's list by
    topic, so the decoded order is the grouped one.)"""
    case = java_case(view, layout)
    java = {m: [(t, p) for t, p in parts] for m, parts in oracle.run(case).items()}
    java_bytes = {m: consumer_protocol.encode_assignment(Assignment(tuple(TopicPartition(*tp) for tp in parts)))
                  for m, parts in java.items()}
    ours = {m.member_id: m.assignment for m in view.members}
    if ours != java_bytes:
        cluster, subs = build_inputs(case)
        fresh = get_assignor(case["assignor"]).assign(cluster, subs)
        raise AssertionError(f"generation {view.generation_id} ({view.protocol_name}): ours "
                             f"{emulator_assignment(view)} != Java {java}; a fresh port on the same case gives "
                             f"{fresh}; case {minimal_case_json(case)}")
    return java


def every_topic_assigned(view: GroupView) -> bool:
    """False for a generation whose leader lacked metadata for a subscribed topic.

    kafka-python's leader (like Java's) skips topics missing from its metadata snapshot and
    rejoins once it learns them; that transient generation is not comparable with Java run on
    the full cluster, so the tests wait past it.
    """
    subscribed = {t for m in view.members for p in m.protocols if p.name == view.protocol_name
                  for t in consumer_protocol.decode_subscription(p.metadata).topics}
    assigned = {t for parts in emulator_assignment(view).values() for t, _p in parts}
    return subscribed <= assigned


def stable_view(emu: Emulator, group: str, members: int, client_parts: Callable[[], list[set[tuple[str, int]]]],
                after_generation: int = 0) -> GroupView:
    """The group Stable with ``members`` members, every topic assigned, every client holding what it was given."""
    deadline = time.monotonic() + DEADLINE_S
    last: Any = None
    while time.monotonic() < deadline:
        view = emu.group(group)
        if view is not None and view.state == "Stable" and len(view.members) == members \
                and view.generation_id > after_generation and every_topic_assigned(view):
            given = sorted(sorted(parts) for parts in emulator_assignment(view).values())
            held = sorted(sorted(parts) for parts in client_parts())
            last = (view.generation_id, given, held)
            if given == held:
                time.sleep(0.3)  # no rebalance starting right behind it
                again = emu.group(group)
                if again is not None and again.state == "Stable" and again.generation_id == view.generation_id:
                    return again
        time.sleep(0.05)
    raise TimeoutError(f"group {group} never settled with {members} members; last seen {last}")


def covers_subscribed(java: dict[str, Parts], topics_of: list[list[str]]) -> None:
    wanted = {(t, p) for topics in topics_of for t in topics for p in range(TOPICS[t])}
    got = [tp for parts in java.values() for tp in parts]
    assert sorted(got) == sorted(wanted)


# -- kafka-python ----------------------------------------------------------------------------


class KafkaPythonMember:
    """A KafkaConsumer polling in its own thread."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], strategy: Any) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group,
                                      partition_assignment_strategy=[strategy], enable_auto_commit=False,
                                      **FAST)
        self.topics = topics
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._held: set[tuple[str, int]] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        know_partitions_before_joining(self.consumer)  # no metadata-triggered rejoin (see the helper)
        while not self._stop.is_set():
            # Long polls: kafka-python 3.0.12 can stop heartbeating for good when a short poll times out
            # while a JoinGroup/SyncGroup is in flight (a client bug, also seen against real brokers).
            self.consumer.poll(timeout_ms=1000)
            with self._lock:
                self._held = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def held(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._held)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def _kafka_python_group(emu: Emulator, oracle: JavaOracle, name: str, subscriptions: list[list[str]]) -> None:
    from rebalance_lab.clients.adapters.kafka_python import kafka_python_assignor

    group = f"kp-{name}-{uuid.uuid4().hex[:6]}"
    members: list[KafkaPythonMember] = []

    def held() -> list[set[tuple[str, int]]]:
        return [m.held() for m in members]

    try:
        members.append(KafkaPythonMember(emu.bootstrap_servers, group, subscriptions[0], kafka_python_assignor(name)))
        first = stable_view(emu, group, 1, held)
        for topics in subscriptions[1:]:
            members.append(KafkaPythonMember(emu.bootstrap_servers, group, topics, kafka_python_assignor(name)))
        view = stable_view(emu, group, 3, held, first.generation_id)
        assert view.protocol_name == name
        covers_subscribed(check_against_java(oracle, view), subscriptions)
        if name == "sticky":
            members.pop(1).close()
            after = stable_view(emu, group, 2, held, view.generation_id)
            subs = [consumer_protocol.decode_subscription(p.metadata) for m in after.members for p in m.protocols]
            assert all(s.user_data for s in subs), "sticky user data must carry the previous assignment"
            assert all(consumer_protocol.decode_sticky_user_data(s.user_data).generation == view.generation_id
                       for s in subs)
            check_against_java(oracle, after)
    finally:
        for m in members:
            m.close()


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky"])
@pytest.mark.parametrize("subscriptions", [EQUAL, UNEQUAL], ids=["equal", "unequal"])
def test_kafka_python_group_matches_java(java_oracle: JavaOracle, name: str, subscriptions: list[list[str]]) -> None:
    with _emulator() as emu:
        _kafka_python_group(emu, java_oracle, name, subscriptions)


@pytest.mark.parametrize("subscriptions", [EQUAL, UNEQUAL], ids=["equal", "unequal"])
def test_kafka_python_cooperative_sticky_two_phase_matches_java(java_oracle: JavaOracle,
                                                                subscriptions: list[list[str]]) -> None:
    """Two members settle; a third joins: the owners revoke first (one rebalance), then the
    partitions reach it (a second). Every Stable generation seen matches Java."""
    from rebalance_lab.clients.adapters.kafka_python import KafkaPythonCooperativeStickyAssignor

    group = f"kp-coop-{uuid.uuid4().hex[:6]}"
    with _emulator() as emu:
        members: list[KafkaPythonMember] = []
        seen: dict[int, GroupView] = {}
        watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                view = emu.group(group)
                if view is not None and view.state == "Stable" and all(m.assignment for m in view.members):
                    seen.setdefault(view.generation_id, view)
                time.sleep(0.005)

        def held() -> list[set[tuple[str, int]]]:
            return [m.held() for m in members]

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            for topics in subscriptions[:2]:
                members.append(KafkaPythonMember(emu.bootstrap_servers, group, topics,
                                                 KafkaPythonCooperativeStickyAssignor))
            two = stable_view(emu, group, 2, held)
            check_against_java(java_oracle, two)
            members.append(KafkaPythonMember(emu.bootstrap_servers, group, subscriptions[2],
                                             KafkaPythonCooperativeStickyAssignor))
            three = stable_view(emu, group, 3, held, two.generation_id)
            assert three.generation_id >= two.generation_id + 2, "a cooperative move takes two rebalances"
            java = check_against_java(java_oracle, three)
            covers_subscribed(java, subscriptions)
            # The final generation's subscriptions carry owned partitions and a generation (v3).
            subs = [consumer_protocol.decode_subscription(p.metadata) for m in three.members for p in m.protocols]
            assert any(s.owned_partitions for s in subs)
            assert all(s.generation_id is not None for s in subs)
        finally:
            watching.set()
            watcher.join(5)
            for m in members:
                m.close()
        for view in seen.values():
            if len(view.members) >= 2 and every_topic_assigned(view):
                check_against_java(java_oracle, view)
        assert three.generation_id in seen or len(seen) >= 1


def _layout_of(consumer: Any) -> Layout:
    """Brokers (with racks) and partition replicas as a kafka-python client's metadata shows them."""
    cluster = consumer._client.cluster
    brokers = [{"id": b.node_id, "rack": b.rack} for b in sorted(cluster.brokers(), key=lambda b: b.node_id)]
    topics = []
    for t in TOPICS:
        parts = cluster._partitions[t]
        topics.append({"name": t, "partitions": [list(parts[p].replica_nodes) for p in sorted(parts)]})
    return brokers, topics


@pytest.mark.parametrize("name", ["range", "sticky", "cooperative-sticky"])
def test_kafka_python_rack_aware_matches_java(java_oracle: JavaOracle, name: str) -> None:
    """Brokers on racks a/b/c, each consumer on one rack (``rack_id=``, Java's ``client.rack``):
    the rack travels in subscription v3, partition racks come from the leader's metadata, and
    the KIP-881 rack-aware assignment equals Java's."""
    from rebalance_lab.clients.adapters.kafka_python import kafka_python_assignor

    group = f"kp-rack-{name}-{uuid.uuid4().hex[:6]}"
    racks = ["a", "b", "c"]
    with Emulator(initial_rebalance_delay_ms=0, topics=list(TOPICS.items()), brokers=3, racks=racks) as emu:
        members: list[KafkaPythonMember] = []

        def held() -> list[set[tuple[str, int]]]:
            return [m.held() for m in members]

        try:
            members.append(KafkaPythonMember(emu.bootstrap_servers, group, UNEQUAL[0],
                                             kafka_python_assignor(name, rack_id=racks[0])))
            first = stable_view(emu, group, 1, held)
            for i, topics in enumerate(UNEQUAL[1:], start=1):
                members.append(KafkaPythonMember(emu.bootstrap_servers, group, topics,
                                                 kafka_python_assignor(name, rack_id=racks[i])))
            view = stable_view(emu, group, 3, held, first.generation_id)
            layout = _layout_of(members[0].consumer)
            assert {b["rack"] for b in layout[0]} == set(racks)
            subs = [consumer_protocol.decode_subscription(p.metadata) for m in view.members for p in m.protocols]
            assert sorted(s.rack_id or "" for s in subs) == racks
            check_against_java(java_oracle, view, layout)
        finally:
            for m in members:
                m.close()


# -- aiokafka --------------------------------------------------------------------------------


async def _aiokafka_group(emu: Emulator, oracle: JavaOracle, name: str, subscriptions: list[list[str]]) -> None:
    from aiokafka import AIOKafkaConsumer

    from rebalance_lab.clients.adapters.aiokafka import aiokafka_assignor

    group = f"aio-{name}-{uuid.uuid4().hex[:6]}"
    consumers: list[Any] = []

    def held() -> list[set[tuple[str, int]]]:
        return [{(tp.topic, tp.partition) for tp in c.assignment()} for c in consumers]

    async def settle(count: int, after: int = 0) -> GroupView:
        return await asyncio.to_thread(stable_view, emu, group, count, held, after)

    async def add(topics: list[str]) -> None:
        consumer = AIOKafkaConsumer(*topics, bootstrap_servers=emu.bootstrap_servers, group_id=group,
                                    partition_assignment_strategy=[aiokafka_assignor(name)],
                                    enable_auto_commit=False, **FAST)
        await consumer.start()
        consumers.append(consumer)

    try:
        await add(subscriptions[0])
        first = await settle(1)
        for topics in subscriptions[1:]:
            await add(topics)
        view = await settle(3, first.generation_id)
        assert view.protocol_name == name
        covers_subscribed(check_against_java(oracle, view), subscriptions)
        if name == "sticky":
            await consumers.pop(1).stop()
            after = await settle(2, view.generation_id)
            subs = [consumer_protocol.decode_subscription(p.metadata) for m in after.members for p in m.protocols]
            assert all(s.user_data for s in subs), "sticky user data must carry the previous assignment"
            check_against_java(oracle, after)
    finally:
        for c in consumers:
            await c.stop()


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky"])
@pytest.mark.parametrize("subscriptions", [EQUAL, UNEQUAL], ids=["equal", "unequal"])
def test_aiokafka_group_matches_java(java_oracle: JavaOracle, name: str, subscriptions: list[list[str]]) -> None:
    # The emulator runs on its own thread; the consumers on this test's own event loop.
    with _emulator() as emu:
        asyncio.run(_aiokafka_group(emu, java_oracle, name, subscriptions))
