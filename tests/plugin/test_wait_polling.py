"""``wait_for_group(..., polling=[consumers], until=...)``: a test waits for a group of kafka-python (2.x or
3.x) or confluent-kafka consumers without a poll loop of its own, and still reads every record itself; the README's
Python example, filled in with kafka-python, runs as written; the fixture objects have short reprs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from kafka import KafkaConsumer, KafkaProducer

from rebalance_lab.api import ConsumerGroupView, Emulator
from rebalance_lab.clients.member import GroupMember

REPO = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "rebalance-lab" / "clients"
RECORDS = [b"order %d" % i for i in range(6)]


def _produce(emu: Emulator) -> None:
    producer = KafkaProducer(bootstrap_servers=emu.bootstrap_servers)
    for i, value in enumerate(RECORDS):
        producer.send("orders", value=value, partition=i % 3)
    producer.flush()
    producer.close()


def _read_kafka_python(consumers: list[KafkaConsumer], count: int) -> list[bytes]:
    seen: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(seen) < count and time.monotonic() < deadline:
        for consumer in consumers:
            for records in consumer.poll(timeout_ms=50).values():
                seen.extend(r.value for r in records)
    return seen


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_wait_for_group_polls_kafka_python_consumers_and_they_still_read_every_record(rebalance_lab: Emulator) -> None:
    _produce(rebalance_lab)
    class AppConsumer(KafkaConsumer):  # an application's own subclass is polled as well
        pass

    consumers = [kind("orders", group_id="g", bootstrap_servers=rebalance_lab.bootstrap_servers,
                      auto_offset_reset="earliest", enable_auto_commit=False) for kind in (KafkaConsumer, AppConsumer)]
    try:
        view = rebalance_lab.wait_for_group("g", state="Stable", members=2, timeout=20, polling=consumers,
                                            until=lambda: all(c.assignment() for c in consumers))
        assert len(view.members) == 2 and sorted(len(c.assignment()) for c in consumers) == [1, 2]
        with pytest.raises(TimeoutError, match=r"matched \(state=Stable .*\) but until\(\) was still false"):
            rebalance_lab.wait_for_group("g", timeout=0.5, polling=consumers, until=lambda: False)  # fetches
        assert sorted(_read_kafka_python(consumers, len(RECORDS))) == sorted(RECORDS)  # each exactly once
    finally:
        for consumer in consumers:
            consumer.close()


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_a_kafka_python_leader_whose_metadata_answer_comes_after_its_join_still_gets_its_assignment(
        rebalance_lab: Emulator) -> None:
    """kafka-python 3.0.12 loses the assignment of a rejoin that its leader starts when the topic's metadata
    arrives after the first join, if a poll ends between that rejoin's JoinGroup answer (when the leader assigns)
    and its SyncGroup answer (see client_polling). Slow Metadata (600 ms) and SyncGroup (300 ms, longer than a
    poller's round) answers make that happen every time unless the poller learns the subscribed topics'
    partitions before its first poll."""
    rebalance_lab.add_latency(600, api="Metadata")
    rebalance_lab.add_latency(300, api="SyncGroup")
    consumer = KafkaConsumer("orders", group_id="g", bootstrap_servers=rebalance_lab.bootstrap_servers,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        rebalance_lab.wait_for_group("g", state="Stable", members=1, timeout=20, polling=[consumer],
                                     until=lambda: bool(consumer.assignment()))
        assert len(consumer.assignment()) == 3
        assert [entry["generation"] for entry in rebalance_lab.history("g")] == [1]  # one join, no rejoin
    finally:
        consumer.close()


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_wait_for_group_polls_a_confluent_kafka_consumer_and_it_still_reads_every_record(
        rebalance_lab: Emulator) -> None:
    _produce(rebalance_lab)
    consumer = Consumer({"bootstrap.servers": rebalance_lab.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    try:
        rebalance_lab.wait_for_group("g", state="Stable", members=1, timeout=20, polling=[consumer])
        with pytest.raises(TimeoutError):  # keeps polling (and fetching) for a while
            rebalance_lab.wait_for_group("g", generation_at_least=9, timeout=0.5, polling=[consumer])
        seen: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(seen) < len(RECORDS) and time.monotonic() < deadline:
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                seen.append(message.value())
        assert sorted(seen) == sorted(RECORDS)
    finally:
        consumer.close()


def test_a_wait_nobody_joins_says_that_kafka_python_joins_only_inside_poll(rebalance_lab: Emulator) -> None:
    with pytest.raises(TimeoutError, match=r"join only inside poll\(\): wait_for_group\(\.\.\., polling="):
        rebalance_lab.wait_for_group("nobody", state="Stable", timeout=0.1)


def test_polling_takes_only_consumers_and_callables(rebalance_lab: Emulator) -> None:
    calls: list[int] = []
    with pytest.raises(TimeoutError):
        rebalance_lab.wait_for_group("nobody", timeout=0.1, polling=[lambda: calls.append(1)])
    assert calls
    with pytest.raises(TypeError, match="kafka-python or confluent-kafka consumers or callables, not 42"):
        rebalance_lab.wait_for_group("nobody", timeout=0.1, polling=[42])


CHILD = """
import json, sys, time
from kafka import KafkaConsumer
import kafka
from rebalance_lab.client_polling import pollers

consumer = KafkaConsumer("orders", group_id="old", bootstrap_servers=sys.argv[1], auto_offset_reset="earliest",
                         enable_auto_commit=False)
fetched = []
poll = consumer.poll
consumer.poll = lambda **kw: fetched.append(poll(**kw)) or fetched[-1]  # what the poller fetched
(round_,) = pollers([consumer])
deadline = time.monotonic() + 20
while (not consumer.assignment() or sum(len(r) for f in fetched for r in f.values()) == 0) \\
        and time.monotonic() < deadline:
    round_(0.05)
seen = []
while len(seen) < 6 and time.monotonic() < deadline:
    for records in poll(timeout_ms=50).values():
        seen.extend(r.value.decode() for r in records)
print(json.dumps({"version": kafka.__version__, "assigned": len(consumer.assignment()),
                  "fetched_by_poller": sum(len(r) for f in fetched for r in f.values()), "seen": sorted(seen)}))
consumer.close()
"""


def _kafka_python_wheel(version: str) -> Path:
    wheel = CACHE / f"kafka_python-{version}-py2.py3-none-any.whl"
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", f"kafka-python=={version}",
                               "-d", str(CACHE)], capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, "pip download failed: " + done.stdout[-2000:] + done.stderr[-2000:]
    return wheel


@pytest.mark.parametrize("version", ["2.0.2", "2.3.0"])
@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_the_poller_drives_a_kafka_python_2_consumer_that_still_reads_every_record(
        rebalance_lab: Emulator, version: str) -> None:
    """A pure-Python wheel imports from its zip: the child runs kafka-python 2.x, the emulator stays here."""
    _produce(rebalance_lab)
    env = {**os.environ, "PYTHONPATH": f"{_kafka_python_wheel(version)}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-c", CHILD, rebalance_lab.bootstrap_servers], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["version"] == version and result["assigned"] == 3
    assert result["fetched_by_poller"] > 0  # the poller fetched records and gave them back
    assert result["seen"] == sorted(r.decode() for r in RECORDS)
    assert [entry["generation"] for entry in rebalance_lab.history("old")][:1] == [1]


def test_the_readmes_python_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Testing your consumers with it", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "the README's Python example is missing"
    assert "KafkaConsumer" in code.group(1)  # filled in with kafka-python, the client that joins only in poll()
    exec(compile(code.group(1), "README.md", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out.split()
    assert printed[0] == "range" and printed[1].startswith("kafka-python-")


@pytest.mark.rebalance_lab(topics=[("orders", 3)])
def test_the_fixture_objects_and_group_views_have_short_reprs(rebalance_lab: Emulator) -> None:
    assert re.fullmatch(r"<Emulator kafka-4 at 127\.0\.0\.1:\d+ \(1 broker\)>", repr(rebalance_lab))
    assert repr(Emulator(brokers=3, flavor="kafka-3")) == "<Emulator kafka-3 (not running)>"

    async def join() -> None:
        member = GroupMember(rebalance_lab.bootstrap_servers, "g", ["orders"], client_id="c")
        await member.join()
        await member.close(leave=False)

    asyncio.run(join())
    view = rebalance_lab.wait_for_group("g", state="Stable")
    assert re.fullmatch(r"<GroupView 'g' Stable generation 1 protocol range leader c-[0-9a-f-]{36} members 1>",
                        repr(view))


def test_a_consumer_group_view_has_a_short_repr() -> None:
    view = ConsumerGroupView("g", "Stable", 3, 3, "uniform", ())
    assert repr(view) == "<ConsumerGroupView 'g' Stable epoch 3 assignment epoch 3 members 0>"
