"""Each fault kind against a real client, and what the client does about it.

The emulator runs on a background thread (the plugin's ``rebalance_lab`` fixture), so the
same fixture serves aiokafka (async tests) and kafka-python / confluent-kafka (sync tests).
Waits are on conditions (group state, request counts), never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from rebalance_lab.api import Emulator
from tests.clients.member import KAFKA_PYTHON_POLL_MS
from tests.faults.conftest import wait_until, wait_until_async
from tests.support.kafka_python_join import know_partitions_before_joining

pytestmark = [pytest.mark.clients, pytest.mark.rebalance_lab(topics=[("t", 3)], min_session_timeout_ms=1000)]


@pytest.fixture
async def aio(rebalance_lab: Emulator) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = AIOKafkaConsumer("t", group_id="g", client_id="c1", bootstrap_servers=rebalance_lab.bootstrap_servers,
                                heartbeat_interval_ms=100, session_timeout_ms=6000, retry_backoff_ms=50)
    await consumer.start()
    await rebalance_lab.wait_for_group_async("g", state="Stable", generation_at_least=1, timeout=15)
    yield consumer
    await consumer.stop()


def _kafka_python(emu: Emulator, **extra: Any) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer("t", group_id="g", client_id="kp", bootstrap_servers=emu.bootstrap_servers,
                         heartbeat_interval_ms=100, session_timeout_ms=6000, retry_backoff_ms=50,
                         enable_auto_commit=False, **extra)


@pytest.fixture
def kp(rebalance_lab: Emulator) -> Iterator[Any]:
    consumer = _kafka_python(rebalance_lab)
    know_partitions_before_joining(consumer)  # no metadata-triggered rejoin: kafka-python 3.0.12 can lose its result
    wait_until(lambda: len(consumer.assignment()) == 3 and _stable(rebalance_lab), 30.0,
               step=lambda: consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS), what="kafka-python join")
    yield consumer
    consumer.close()


def _stable(emu: Emulator) -> bool:
    view = emu.group("g")
    return view is not None and view.state == "Stable"


def _confluent(emu: Emulator, **extra: Any) -> Any:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": emu.bootstrap_servers, "group.id": "g", "client.id": "ck",
                         "heartbeat.interval.ms": 100, "session.timeout.ms": 6000, "retry.backoff.ms": 50,
                         "topic.metadata.refresh.interval.ms": 1000, **extra})
    consumer.subscribe(["t"])
    wait_until(lambda: consumer.assignment(), step=lambda: consumer.poll(0.05), what="confluent-kafka join")
    return consumer


# -- request errors -------------------------------------------------------------------------------


async def test_aiokafka_rejoins_after_rebalance_in_progress_is_injected_on_its_heartbeat(
    rebalance_lab: Emulator, aio: AIOKafkaConsumer
) -> None:
    rebalance_lab.inject_error("Heartbeat", "REBALANCE_IN_PROGRESS", group_id="g")
    view = await rebalance_lab.wait_for_group_async("g", state="Stable", generation_at_least=2, timeout=15)
    assert len(view.members) == 1
    assert [h["generation"] for h in rebalance_lab.history("g")] == [1, 2]


def test_an_offset_commit_error_for_one_member_reaches_kafka_python_once(rebalance_lab: Emulator, kp: Any) -> None:
    from kafka.errors import GroupAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata, TopicPartition

    member_id = rebalance_lab.describe("g")["members"][0]["member_id"]  # type: ignore[index]
    rebalance_lab.inject_error("OffsetCommit", "GROUP_AUTHORIZATION_FAILED", group_id="g", member_id=member_id)
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(7, "", -1)}
    with pytest.raises(GroupAuthorizationFailedError):
        kp.commit(offsets)
    kp.commit(offsets)  # the fault was for one request only
    assert rebalance_lab.committed("g") == {("t", 0): 7}


# -- the coordinator moves, loads, or its broker restarts --------------------------------------------


@pytest.mark.rebalance_lab(brokers=3)
def test_confluent_kafka_finds_the_moved_coordinator(rebalance_lab: Emulator) -> None:
    consumer = _confluent(rebalance_lab)
    try:
        old = rebalance_lab.describe("g")["coordinator"]  # type: ignore[index]
        new = (old + 1) % 3
        rebalance_lab.move_coordinator("g", new)
        wait_until(lambda: rebalance_lab.request_counts("Heartbeat").get(new, 0) >= 2,
                   step=lambda: consumer.poll(0.05), what="heartbeats on the new coordinator")
        assert rebalance_lab.describe("g")["coordinator"] == new  # type: ignore[index]
        assert rebalance_lab.group("g").state == "Stable"  # type: ignore[union-attr]
    finally:
        consumer.close()


def _poll_through_disconnects(consumer: Any) -> None:
    """kafka-python 3.0.12 raises the coordinator lookup's KafkaConnectionError out of poll() when
    the lookup went to the stopped broker; an application retries, and so does this step."""
    from kafka.errors import KafkaConnectionError

    with contextlib.suppress(KafkaConnectionError):
        consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)  # long polls: see KAFKA_PYTHON_POLL_MS


@pytest.mark.rebalance_lab(brokers=3)
def test_kafka_python_survives_its_coordinators_broker_restarting(rebalance_lab: Emulator, kp: Any) -> None:
    from kafka.structs import OffsetAndMetadata, TopicPartition

    old = rebalance_lab.describe("g")["coordinator"]  # type: ignore[index]
    rebalance_lab.broker_down(old)
    assert not next(b for b in rebalance_lab.brokers() if b["node_id"] == old)["up"]
    new = rebalance_lab.describe("g")["coordinator"]  # type: ignore[index]
    assert new not in (None, old)  # __consumer_offsets has 3 replicas: a new leader was elected
    wait_until(lambda: rebalance_lab.request_counts("Heartbeat").get(new, 0) >= 2,
               step=lambda: _poll_through_disconnects(kp), what="heartbeats on the new coordinator")
    rebalance_lab.broker_up(old)
    kp.commit({TopicPartition("t", 1): OffsetAndMetadata(3, "", -1)})
    assert rebalance_lab.committed("g") == {("t", 1): 3}
    assert rebalance_lab.group("g").state == "Stable"  # type: ignore[union-attr]


async def test_a_coordinator_load_in_progress_window_delays_an_aiokafka_join(rebalance_lab: Emulator) -> None:
    rebalance_lab.load_in_progress(800)
    started = time.monotonic()
    consumer = AIOKafkaConsumer("t", group_id="g", bootstrap_servers=rebalance_lab.bootstrap_servers,
                                retry_backoff_ms=50)
    await consumer.start()
    try:
        await rebalance_lab.wait_for_group_async("g", state="Stable", timeout=15)
        assert time.monotonic() - started >= 0.75
        assert rebalance_lab.request_counts("JoinGroup")[0] >= 2  # refused with 14, then retried
    finally:
        await consumer.stop()


# -- latency, throttling, connections ----------------------------------------------------------------


async def test_added_join_group_latency_slows_an_aiokafka_join_by_that_much(rebalance_lab: Emulator) -> None:
    rebalance_lab.add_latency(600, api="JoinGroup", count=1)
    started = time.monotonic()
    consumer = AIOKafkaConsumer("t", group_id="g", bootstrap_servers=rebalance_lab.bootstrap_servers)
    await consumer.start()
    try:
        await rebalance_lab.wait_for_group_async("g", state="Stable", timeout=15)
        assert time.monotonic() - started >= 0.6
    finally:
        await consumer.stop()


def test_a_throttled_fetch_is_reported_to_confluent_kafkas_throttle_callback(rebalance_lab: Emulator) -> None:
    events: list[Any] = []
    consumer = _confluent(rebalance_lab, throttle_cb=events.append)
    try:
        rebalance_lab.throttle(250, api="Fetch", count=2)
        wait_until(lambda: events, step=lambda: consumer.poll(0.05), what="a throttle event")
        assert events[0].throttle_time == pytest.approx(0.25)
    finally:
        consumer.close()


async def test_closing_a_clients_connections_makes_aiokafka_reconnect_without_a_rebalance(
    rebalance_lab: Emulator, aio: AIOKafkaConsumer
) -> None:
    before = rebalance_lab.request_counts("Heartbeat").get(0, 0)
    assert rebalance_lab.close_connections("c1") >= 1
    await wait_until_async(lambda: rebalance_lab.request_counts("Heartbeat").get(0, 0) >= before + 3,
                           what="heartbeats after reconnecting")
    assert rebalance_lab.request_counts("FindCoordinator")[0] >= 2  # it looked for its coordinator again
    view = rebalance_lab.group("g")
    assert view is not None and (view.state, view.generation_id) == ("Stable", 1)


# -- group operations -------------------------------------------------------------------------------


def test_a_forced_rebalance_makes_kafka_python_rejoin(rebalance_lab: Emulator, kp: Any) -> None:
    before = rebalance_lab.group("g").generation_id  # type: ignore[union-attr]
    rebalance_lab.force_rebalance("g")
    assert rebalance_lab.group("g").state == "PreparingRebalance"  # type: ignore[union-attr]
    wait_until(lambda: _stable(rebalance_lab), 30.0, step=lambda: kp.poll(timeout_ms=KAFKA_PYTHON_POLL_MS),
               what="a new generation")
    assert rebalance_lab.group("g").generation_id == before + 1  # type: ignore[union-attr]
    assert len(kp.assignment()) == 3


async def test_an_expired_aiokafka_member_rejoins_under_a_new_member_id(
    rebalance_lab: Emulator, aio: AIOKafkaConsumer
) -> None:
    old = rebalance_lab.describe("g")["members"][0]["member_id"]  # type: ignore[index]
    rebalance_lab.expire_member("g", old)
    view = await rebalance_lab.wait_for_group_async("g", state="Stable", generation_at_least=2, members=1)
    assert view.members[0].member_id != old
