"""--record writes the canonical event schema; --explain narrates the vote and the assignment."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from rebalance_lab.api import Emulator
from rebalance_lab.coordinator.routing import partition_for
from tests.clients.member import KAFKA_PYTHON_POLL_MS
from tests.support.kafka_python_join import know_partitions_before_joining

COMMON = {"schema_version", "source", "source_ref", "seq", "ts", "ts_kind", "cluster_id", "group_id", "event_type"}


def _run_group(emu: Emulator, strategies: list[list[Any]]) -> dict[str, list[int]]:
    consumers = [
        KafkaConsumer("rec", bootstrap_servers=emu.bootstrap_servers, group_id="g", client_id=f"c{i}",
                      partition_assignment_strategy=s, heartbeat_interval_ms=300, session_timeout_ms=6000)
        for i, s in enumerate(strategies)
    ]
    stop = threading.Event()

    def poll(c: KafkaConsumer) -> None:
        know_partitions_before_joining(c)  # no metadata-triggered rejoin: kafka-python 3.0.12 can lose it
        while not stop.is_set():
            c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)  # long polls: see KAFKA_PYTHON_POLL_MS

    threads = [threading.Thread(target=poll, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    view = emu.wait_for_group("g", state="Stable", members=len(consumers), generation_at_least=1, timeout=30)
    deadline = time.monotonic() + 10
    while sum(len(c.assignment()) for c in consumers) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    result = {c.config["client_id"]: sorted(tp.partition for tp in c.assignment()) for c in consumers}
    assert view.protocol_name == "range"
    stop.set()
    for t in threads:
        t.join(5)
    for c in consumers:
        c.close()
    return result


def test_a_recording_follows_the_event_schema_and_matches_what_the_clients_got(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    strategies = [[RangePartitionAssignor, RoundRobinPartitionAssignor],
                  [RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor],
                  [RoundRobinPartitionAssignor, RangePartitionAssignor, StickyPartitionAssignor]]
    with Emulator(topics=[("rec", 6)], record_path=str(path), initial_rebalance_delay_ms=200) as emu:
        got = _run_group(emu, strategies)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    for row in rows:
        assert row.keys() >= COMMON, row
        assert row["schema_version"] == "rbl-event/1" and row["source"] == "emulator"
    types = [r["event_type"] for r in rows if r["group_id"] == "g"]
    for expected in ("MEMBER_JOINED", "REBALANCE_PREPARE", "JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT",
                     "GENERATION_SNAPSHOT", "MEMBER_LEFT"):
        assert expected in types
    assert {"rec": 6} in [r.get("topic_partitions") for r in rows]
    complete = next(r for r in rows if r["event_type"] == "JOIN_COMPLETE")
    assert complete["protocol"] == "range" and sorted(complete["supported_protocols"]) == ["range", "roundrobin"]
    snapshot = next(r for r in rows if r["event_type"] == "GENERATION_SNAPSHOT")
    recorded = {m["client_id"]: sorted(tp["partition"] for tp in m["assignment"]) for m in snapshot["members"]}
    assert recorded == got
    assert all(m["topics"] == ["rec"] for m in snapshot["members"])
    assert all(m["generation"] == -1 for m in snapshot["members"])  # a first join sends no generation


def test_group_rows_name_their_coordinator_and_rebalances_count_the_generation_being_formed(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    strategies = [[RangePartitionAssignor], [RangePartitionAssignor]]
    with Emulator(topics=[("rec", 6)], record_path=str(path), initial_rebalance_delay_ms=200) as emu:
        _run_group(emu, strategies)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    group_rows = [r for r in rows if r["group_id"] == "g"]
    assert {(r["broker_id"], r["coord_partition"]) for r in group_rows} == {(0, partition_for("g", 50))}
    assert all("coord_partition" not in r for r in rows if r["event_type"] == "TOPIC_METADATA")
    prepares = [r for r in group_rows if r["event_type"] == "REBALANCE_PREPARE"]
    assert prepares[0]["prev_generation"] == 0 and prepares[0]["generation"] == 1
    assert all(r["generation"] == r["prev_generation"] + 1 for r in prepares)
    completes = [r["generation"] for r in group_rows if r["event_type"] == "JOIN_COMPLETE"]
    assert completes[0] == prepares[0]["generation"]


def test_explain_narrates_each_vote_the_winner_and_the_assignment() -> None:
    out = io.StringIO()
    strategies = [[RangePartitionAssignor, RoundRobinPartitionAssignor],
                  [RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor],
                  [RoundRobinPartitionAssignor, RangePartitionAssignor, StickyPartitionAssignor]]
    with Emulator(topics=[("rec", 6)], explain=True, explain_to=out, initial_rebalance_delay_ms=200) as emu:
        _run_group(emu, strategies)
    text = out.getvalue()
    assert "candidates (offered by every member): range, roundrobin" in text
    assert "range wins 2 to 1" in text
    # the vote table: each member's protocols in preference order, its vote starred
    assert "roundrobin*, range, sticky" in text and text.count("range*, roundrobin") >= 2
    assert "MEMBER_ID_REQUIRED" in text and "assigned generation 1 (range)" in text
    assert "sent LeaveGroup" in text
