"""``rebalance-lab demo``: the main job. A rebalance, end to end, with real Kafka clients.

The emulator runs on a background thread with narration on; real kafka-python
consumers (and one in a separate process, to crash it for real) play:

1. three consumers with different assignor preferences join one group:
   ``[range, roundrobin, custom]``, ``[range, roundrobin, sticky]``,
   ``[roundrobin, range, sticky]``: the candidates are {range, roundrobin} and
   range wins 2 to 1;
2. one member leaves (LeaveGroup): the others take over its partitions;
3. a member in another process is killed without leaving: the coordinator
   expires it when its session timeout passes, and rebalances;
4. a static member (``group.instance.id``) restarts within its session timeout:
   the coordinator swaps in its new member id without a rebalance;
5. the end, the static-membership lesson: the static member shuts down for good (a static member
   sends no LeaveGroup). The coordinator keeps its place and partitions, since it might be
   restarting; only its session timeout (10 s) would end the wait. The demo ends it at once as an
   operator would (Kafka's ``Admin.removeMembersFromConsumerGroup``; here the emulator's expire).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from rebalance_lab.api import Emulator
from rebalance_lab.coordinator.classic.view import GroupView

GROUP = "demo-group"
TOPIC = "demo"
PARTITIONS = 6
RECORDS = 600
POLL_MS = 1000

_VICTIM = textwrap.dedent(
    f"""
    import sys, time
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    consumer = KafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                             client_id="crasher", session_timeout_ms=3000, heartbeat_interval_ms=500,
                             partition_assignment_strategy=[RangePartitionAssignor, RoundRobinPartitionAssignor])
    consumer.partitions_for_topic(sys.argv[2])  # before joining: see DemoConsumer._run
    while True:
        consumer.poll(timeout_ms={POLL_MS})
    """
)


def _custom_assignor() -> type:
    """A kafka-python assignor named ``custom`` that only one member offers (it never wins)."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class CustomAssignor(RangePartitionAssignor):  # type: ignore[misc]
        name = "custom"

    return CustomAssignor


class DemoConsumer:
    """A kafka-python consumer polling on its own thread, counting what it reads."""

    total = 0  # records read by every demo consumer so far

    def __init__(self, bootstrap: str, client_id: str, strategies: list[Any], **extra: Any) -> None:
        from kafka import KafkaConsumer

        self.client_id = client_id
        self.consumer = KafkaConsumer(
            TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, client_id=client_id,
            partition_assignment_strategy=strategies, auto_offset_reset="earliest",
            heartbeat_interval_ms=500, session_timeout_ms=extra.pop("session_timeout_ms", 6000),
            auto_commit_interval_ms=500, **extra,
        )
        self.records = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # Long polls: kafka-python 3.0.12 stops heartbeating for good when a poll() times out while its
        # JoinGroup/SyncGroup is in flight and the join completes before the next poll() (the member is
        # then expired); a poll returns as soon as records arrive, so reading stays prompt. That happens on
        # a rejoin a leader starts when the topic's metadata arrives after its first join (it assigned
        # nothing), so each consumer learns the topic's partitions before its first poll: no such rejoin.
        self.consumer.partitions_for_topic(TOPIC)
        while not self._stop.is_set():
            for batch in self.consumer.poll(timeout_ms=POLL_MS).values():
                self.records += len(batch)
                DemoConsumer.total += len(batch)

    def assignment(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def _step(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def _show(view: GroupView, consumers: list[DemoConsumer]) -> None:
    print(f"--- group {GROUP}: {view.state}, generation {view.generation_id}, protocol {view.protocol_name}, "
          f"{len(view.members)} member(s)", flush=True)
    for c in consumers:
        print(f"    {c.client_id}: partitions {c.assignment()}", flush=True)


def _settle(emu: Emulator, consumers: list[DemoConsumer], generation: int, members: int) -> GroupView:
    view = emu.wait_for_group(GROUP, state="Stable", generation_at_least=generation, members=members, timeout=60)
    assert isinstance(view, GroupView)  # the demo's group is classic
    # Clients apply their assignment after SyncGroup; wait until ours show the new generation's share.
    mine = {c.consumer.config["client_id"] for c in consumers}
    if all(m.client_id in mine for m in view.members):
        deadline = time.monotonic() + 30
        while sum(len(c.assignment()) for c in consumers) != PARTITIONS and time.monotonic() < deadline:
            time.sleep(0.05)
    _show(view, consumers)
    return view


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(RECORDS):
        producer.send(TOPIC, key=f"key-{i}".encode(), value=f"record {i}".encode())
    producer.flush()
    producer.close()


def _strategies() -> list[list[Any]]:
    from kafka.coordinator.assignors.range import RangePartitionAssignor as Range
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as RoundRobin
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as Sticky

    return [[Range, RoundRobin, _custom_assignor()], [Range, RoundRobin, Sticky], [RoundRobin, Range, Sticky]]


def _crash_a_member(emu: Emulator, consumers: list[DemoConsumer], generation: int) -> int:
    _step("4. a member in another process joins, then is killed (no LeaveGroup)")
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM, emu.bootstrap_servers, TOPIC, GROUP])
    try:
        view = _settle(emu, consumers, generation + 1, 3)
    finally:
        victim.kill()
        victim.wait()
    print("    (kill -9 sent: the coordinator only notices when the 3000 ms session timeout passes)", flush=True)
    view = _settle(emu, consumers, view.generation_id + 1, 2)
    return view.generation_id


def _restart_static(emu: Emulator, consumers: list[DemoConsumer], generation: int) -> DemoConsumer:
    from kafka.coordinator.assignors.range import RangePartitionAssignor as Range

    _step("5. a static member (group.instance.id=static-1) joins, then restarts within its session timeout")
    static = DemoConsumer(emu.bootstrap_servers, "static-1", [Range], group_instance_id="static-1",
                          session_timeout_ms=10000)
    view = _settle(emu, [*consumers, static], generation + 1, 3)
    static.close()  # a static member does not send LeaveGroup on close (KIP-345)
    print("    static-1 closed without leaving; starting it again with the same instance id", flush=True)
    again = DemoConsumer(emu.bootstrap_servers, "static-1", [Range], group_instance_id="static-1",
                         session_timeout_ms=10000)
    time.sleep(2)
    after = _settle(emu, [*consumers, again], view.generation_id, 3)
    same = "no rebalance" if after.generation_id == view.generation_id else "a rebalance (unexpected)"
    print(f"    generation before restart {view.generation_id}, after {after.generation_id}: {same}", flush=True)
    return again


_LESSON = (
    "static-1 is gone, but the coordinator keeps its place and its partitions {parts}: a static member that "
    "stops sending heartbeats may be restarting (step 5), so no rebalance starts until its session timeout, "
    "10000 ms here, has passed, and until then nobody reads those partitions. That is the price of a restart "
    "without a rebalance: a long session timeout makes restarts cheap and real departures slow. What ends the "
    "wait early: an operator removing the member (Kafka's Admin.removeMembersFromConsumerGroup sends a "
    "LeaveGroup naming its group.instance.id), or the member coming back. The demo removes it now with the "
    "emulator's expire instead of waiting."
)


def _static_lesson(emu: Emulator, static: DemoConsumer, consumers: list[DemoConsumer]) -> None:
    """The end, made deliberate (issue 19, item 6): the static member's stall is the lesson, not noise."""
    _step("6. the end: static-1 shuts down for good (a static member sends no LeaveGroup)")
    parts = static.assignment()
    static.close()
    view = emu.group(GROUP)
    assert isinstance(view, GroupView)  # the demo's group is classic
    print(textwrap.fill(_LESSON.format(parts=parts), 100, initial_indent="    ", subsequent_indent="    "),
          flush=True)
    member = next(m for m in view.members if m.group_instance_id == "static-1")
    emu.expire_member(GROUP, member.member_id)
    _settle(emu, consumers, view.generation_id + 1, 2)
    print(f"    static-1 removed: the others rebalanced at once and read {parts} again", flush=True)
    for c in consumers:
        c.close()


def run(record_path: str = "demo-recording.jsonl") -> int:
    Path(record_path).unlink(missing_ok=True)
    with Emulator(topics=[(TOPIC, PARTITIONS)], explain=True, record_path=record_path,
                  initial_rebalance_delay_ms=1000, min_session_timeout_ms=1000) as emu:
        print(f"rebalance-lab emulator (flavor {emu.config.flavor}) at {emu.bootstrap_servers}", flush=True)
        _step(f"1. producing {RECORDS} keyed records to {TOPIC} ({PARTITIONS} partitions)")
        _produce(emu.bootstrap_servers)
        _step("2. three consumers with different assignor preferences join the group")
        strategies = _strategies()
        consumers = [DemoConsumer(emu.bootstrap_servers, f"consumer-{i + 1}", s) for i, s in enumerate(strategies)]
        view = _settle(emu, consumers, 1, 3)
        _step("3. consumer-3 leaves the group (LeaveGroup)")
        consumers.pop().close()
        view = _settle(emu, consumers, view.generation_id + 1, 2)
        generation = _crash_a_member(emu, consumers, view.generation_id)
        static = _restart_static(emu, consumers, generation)
        _static_lesson(emu, static, consumers)
    _step("done")
    print(f"records read by the in-process consumers: {DemoConsumer.total} of {RECORDS} produced "
          "(a record read again after its partition moved counts again)", flush=True)
    print(f"the coordinator's recording (JSON Lines, schema rbl-event/1): {Path(record_path).resolve()}", flush=True)
    return 0


def replay(record_path: str, out_dir: str, *, open_report: bool = True) -> int:
    """The demo's last step: replay its own recording, with what-ifs, and open the report.

    ``--engine auto`` replays a recording this small in the single process (about a second, with no
    pyarrow, pandas or JVM loaded) where Spark would take 25-45 s to start; the tables are the same."""
    from rebalance_lab.replay.cli import main as replay_main

    _step(f"replaying the recording into {out_dir}/ with what-if sticky and cooperative-sticky")
    status = replay_main([record_path, "--out", out_dir, "--engine", "auto",
                          "--what-if", "sticky", "--what-if", "cooperative-sticky"], prog="rebalance-lab replay")
    report = Path(out_dir, "report.html").resolve()
    if status != 0 or not report.exists():
        return status or 1
    print(f"the replay's report: {report.as_uri()}", flush=True)
    if open_report and _has_display():
        import webbrowser

        webbrowser.open(report.as_uri())
    return 0


def _has_display() -> bool:
    """A browser can be shown: not CI, and a desktop session (or macOS/Windows)."""
    if os.environ.get("CI"):
        return False
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
