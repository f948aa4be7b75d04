"""The replay of real brokers' evidence, each source alone and all together, against what the clients saw.

Real kafka-python consumers take a group through the history of :mod:`tests.replay_evidence.scenario`
on the session's Kafka 4.4.0 and 3.9.2 brokers; the broker's server.log (INFO, as shipped), the
``kafka-dump-log --offsets-decoder`` output of ``__consumer_offsets`` and both together are replayed,
and every generation the clients completed must come back with its members, leader, protocol,
assignments, static count and trigger, and the group with its static rejoins without a rebalance.
A field a source cannot answer (the log has no assignments) must be unknown, never wrong
(:mod:`rebalance_lab.replay.coverage` says which).

The exporters are checked against the same captures: the real log replayed to events and rendered
again by ``export --as broker-log-scala`` / ``broker-log-java`` gives exactly the real lines, and the
group's records of the real dump rendered by ``export --as dump-log`` / ``dump-log-3`` the real records.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from rebalance_lab.observe.formats import render
from rebalance_lab.replay.events import to_json
from rebalance_lab.replay.sources import SourceContext, parse_file
from tests.replay_evidence.compare import disagreements, replay
from tests.replay_evidence.conftest import Captures
from tests.replay_evidence.java_client import JavaHistory
from tests.replay_evidence.kip848 import History
from tests.replay_evidence.kip848 import disagreements as kip848_disagreements

SOURCE_SETS = {
    "server.log": ("broker-log",),
    "offsets dump": ("dump-log",),
    "both": ("broker-log", "dump-log"),
}
CANONICAL = {"broker-log": "broker_log", "dump-log": "offsets_dumplog"}
EXPORT_FORMAT = {"4": "broker-log-java", "3": "broker-log-scala"}

pytestmark = [pytest.mark.broker, pytest.mark.java]  # real brokers; kafka-dump-log and the Java consumer need Java


@pytest.mark.parametrize("sources", list(SOURCE_SETS))
@pytest.mark.parametrize("flavor", ["4", "3"], ids=["kafka-4.4.0", "kafka-3.9.2"])
def test_the_replay_of_each_source_agrees_with_what_the_clients_saw(evidence: Captures, flavor: str,
                                                                    sources: str) -> None:
    captured, paths = evidence.get(flavor)
    formats = SOURCE_SETS[sources]
    assert len(captured.truth.generations) >= 12, captured.truth.generations  # the scenario ran its course
    assert captured.truth.static_rejoins == 2
    found = disagreements([paths[f] for f in formats], [CANONICAL[f] for f in formats], captured.group,
                          captured.truth)
    assert found == []


def _bodies(lines: list[str]) -> Counter[str]:
    return Counter(re.sub(r"^\[[^\]]*\] ", "", line.rstrip("\n")) for line in lines)


@pytest.mark.parametrize("flavor", ["4", "3"], ids=["kafka-4.4.0", "kafka-3.9.2"])
def test_the_exporter_writes_the_lines_the_real_broker_wrote(evidence: Captures, flavor: str) -> None:
    """Each of the group's lines, at its level, word for word (the time stamps aside: rendered from the same
    events they are equal, but the real ones are compared as written)."""
    captured, paths = evidence.get(flavor)
    events = [e for e in parse_file(paths["broker-log"], "broker-log", SourceContext())
              if e.get("group_id") == captured.group]
    rendered = list(render([json.loads(to_json(e)) for e in events], EXPORT_FORMAT[flavor]))
    real = [line for line in Path(paths["broker-log"]).read_text().splitlines() if captured.group in line]
    assert real and _bodies(rendered) == _bodies(real)
    assert not any("Pending dynamic member" in line for line in real) or flavor == "4"  # 3.x: DEBUG only


def _group_records(lines: list[str], group: str) -> list[tuple[str, ...]]:
    """Each record of ``group`` in a dump: its batch's sequence, size and CRC, and its record line without the
    offset (the broker's dump holds other groups' records too)."""
    key = f'key: {{"type":"2","data":{{"group":"{group}"}}}}'
    found = []
    for batch, record in itertools.pairwise(lines):
        if batch.startswith("baseOffset: ") and record.startswith("| offset: ") and key in record:
            header = re.search(r"baseSequence: (\S+) .* size: (\d+) .* crc: (\d+)", batch)
            assert header, batch
            found.append((*header.groups(), re.sub(r"^\| offset: \d+ ", "", record)))
    return found


@pytest.mark.parametrize("flavor", ["4", "3"], ids=["kafka-4.4.0", "kafka-3.9.2"])
def test_the_dump_exporter_writes_the_records_the_real_broker_wrote(evidence: Captures, flavor: str) -> None:
    """The group's records of the real dump, read and rendered again by ``export --as dump-log`` (4.x) or
    ``dump-log-3`` (3.x), are the real records byte for byte: sequence, size, CRC, sizes and every field."""
    captured, paths = evidence.get(flavor)
    events = [json.loads(to_json(e)) for e in parse_file(paths["dump-log"], "dump-log", SourceContext())
              if e.get("group_id") == captured.group]
    rendered = list(render(events, "dump-log" if flavor == "4" else "dump-log-3"))
    real = _group_records(Path(paths["dump-log"]).read_text().splitlines(), captured.group)
    assert len(real) >= 12 and _group_records(rendered, captured.group) == real


def test_a_java_client_log_alone_gives_each_generation_it_synced_with_members_and_times(
        java_evidence: tuple[JavaHistory, Path]) -> None:
    """The Java consumer led every generation: its log alone gives each one complete, timed (its own
    "(Re-)joining", JoinGroup and SyncGroup lines), with the leader, the protocol and every member's partitions
    (its "Finished assignment" line), which the kafka-python members confirm; the broker's log agrees."""
    history, server_log = java_evidence
    from_client, _, episodes = replay([history.log], history.group)
    assert sorted(from_client) == history.generations == [1, 2, 3, 4, 5]
    assert len(episodes) == len(history.generations)
    for g in from_client.values():
        assert g["completed"] and g["protocol"] == "range"
        assert g["t_prepare"] is not None and g["t_prepare"] <= g["t_join_done"] <= g["t_sync_done"]
    for record in history.records:  # what p and q were given, in the generation they completed
        members = {m["member_id"]: sorted(tp["partition"] for tp in m["assignment"])
                   for m in from_client[record["generation"]]["members"]}
        assert members[record["member_id"]] == record["partitions"]
    from_broker, _, _ = replay([server_log], history.group)
    for number, g in from_client.items():
        assert g["leader_id"] == from_broker[number]["leader_id"]
        assert {m["member_id"] for m in g["members"]} == {m["member_id"] for m in from_broker[number]["members"]}


@pytest.mark.parametrize("sources", list(SOURCE_SETS))
def test_the_replay_of_a_kip848_group_shows_each_state_its_clients_settled_in(kip848_evidence: History,
                                                                              sources: str) -> None:
    """confluent-kafka consumers (``group.protocol=consumer``) joined, one left, a static member restarted: the
    broker's INFO log alone gives each settled state's members, the dump alone and both also their partitions."""
    history = kip848_evidence
    assert [name for name, _ in history.states] == ["m1 joins", "m2 joins", "s3 joins", "m2 leaves", "s3 restarts"]
    paths = {"broker-log": history.server_log, "dump-log": history.dump}
    formats = SOURCE_SETS[sources]
    found = kip848_disagreements([p for f in formats if (p := paths[f]) is not None],
                                 [CANONICAL[f] for f in formats], history)
    assert found == []
