"""A KIP-848 consumer group (confluent-kafka, ``group.protocol=consumer``) across a restart on the same
data directory and port: it comes back with its epoch, member and assignment, and the member that kept
running goes on heartbeating in it without being fenced or rebalanced."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer

from rebalance_lab.api import Emulator
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView
from tests.durability.server_process import free_port

GROUP = "k848"
SETTINGS = {"topics": [("orders", 4)], "consumer_heartbeat_interval_ms": 300,
            "consumer_min_heartbeat_interval_ms": 100}


def _stable(emu: Emulator, timeout: float = 30.0) -> ConsumerGroupView:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = emu.consumer_group(GROUP)
        if view is not None and view.members and all(
                m.state == "STABLE" and m.member_epoch == view.group_epoch for m in view.members):
            return view
        time.sleep(0.05)
    raise AssertionError(f"the group did not settle: {emu.consumer_group(GROUP)}")


def test_a_consumer_group_and_its_running_member_carry_on_after_a_restart(tmp_path: Path) -> None:
    port = free_port()
    consumer = None
    try:
        with Emulator(data_dir=str(tmp_path), port=port, **SETTINGS) as emu:
            consumer = Consumer({"bootstrap.servers": emu.bootstrap_servers, "group.id": GROUP,
                                 "group.protocol": "consumer"})
            consumer.subscribe(["orders"])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.1)
            before = _stable(emu)
        with Emulator(data_dir=str(tmp_path), port=port, **SETTINGS) as emu:
            assert emu.consumer_group(GROUP) == before  # as loaded, before any heartbeat
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:  # ten heartbeat intervals of the running member
                consumer.poll(0.1)
            after = _stable(emu)
            assert (after.group_epoch, [(m.member_id, m.member_epoch, m.assigned) for m in after.members]) == (
                before.group_epoch, [(m.member_id, m.member_epoch, m.assigned) for m in before.members])
            assert len(consumer.assignment()) == 4
    finally:
        if consumer is not None:
            consumer.close()
