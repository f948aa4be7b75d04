"""Regression: the evidence one run of tests/replay_evidence captured from real Kafka 3.9.2 and 4.4.0 brokers,
replayed from each source alone and from both, agrees with what the kafka-python clients saw.

The samples (``samples/evidence-kafka-*``: the group's coordinator lines of ``server.log`` at INFO, the
``kafka-dump-log --offsets-decoder`` output and the clients' record) keep these checks in every run
without a broker; tests/replay_evidence captures fresh evidence each run. Before issue 20 the 3.9.2 log
alone gave no members for most generations (3.x logs a pending member's second join at DEBUG), either log
alone no static count, the 4.4.0 log lost a restarted static member, and a dump alone no static rejoins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay_evidence.compare import disagreements, load_truth

SAMPLES = Path(__file__).resolve().parent / "samples"
SOURCES = {"server.log": ["broker_log"], "offsets.dump.txt": ["offsets_dumplog"]}


@pytest.mark.parametrize("files", [["server.log"], ["offsets.dump.txt"], ["server.log", "offsets.dump.txt"]],
                         ids=["log", "dump", "both"])
@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_real_evidence_replays_to_what_the_clients_saw(version: str, files: list[str]) -> None:
    folder = SAMPLES / f"evidence-kafka-{version}"
    truth = load_truth(folder / "truth.json")
    group = (folder / "group.txt").read_text().strip()
    sources = [source for name in files for source in SOURCES[name]]
    assert disagreements([folder / name for name in files], sources, group, truth) == []


def test_a_real_java_client_log_alone_gives_each_generation_with_its_times_and_members() -> None:
    """A kafka-clients 4.4.0 consumer's log (Kafka's layout, INFO) that led five generations while kafka-python
    members joined and left: nothing unreadable (its multi-line KIP-848 banner is one record), and each
    generation complete with its times, leader and members' partitions, as the kafka-python members saw them."""
    import json

    from rebalance_lab.replay.local import run_local

    folder = SAMPLES / "evidence-java-client-4.4.0"
    recorded = json.loads((folder / "records.json").read_text())
    result = run_local([str(folder / "client.log")])
    assert result.report.unparsed == 0, result.report.samples
    generations = {g["generation"]: g for g in result.tables["group_generations"] if g["group_id"] == recorded["group"]}
    assert sorted(generations) == recorded["generations"]
    assert all(g["completed"] and g["t_sync_done"] is not None for g in generations.values())
    assert len(result.tables["rebalance_episodes"]) == len(generations)
    for record in recorded["records"]:
        members = {m["member_id"]: sorted(tp["partition"] for tp in m["assignment"])
                   for m in generations[record["generation"]]["members"]}
        assert members[record["member_id"]] == record["partitions"]


def _shape(line: str) -> str:
    """A client line's message with every token holding a digit (ids, partitions, generations, host:port,
    the coordinator's "+1") as X and lists of them as one X."""
    import re

    body = re.sub(r"^\[[^\]]*\] \w+ \[Consumer [^\]]*\] ", "", line.rstrip("\n"))
    body = re.sub(r"[\w.:+'-]*\d[\w.:+'-]*", "X", body)
    body = re.sub(r"X(, X)+", "X", body)
    return re.sub(r"X=Assignment\(partitions=\[X?\]\)(, X=Assignment\(partitions=\[X?\]\))*", "X=Assignment(…)", body)


def test_the_client_log_exporter_writes_the_lines_a_real_4_4_0_client_wrote() -> None:
    """Every line ``export --as client-log`` writes for the demo recording, of a kind the real kafka-clients
    4.4.0 consumer logged, has the real line's words: bracketed partition lists from the listener invoker,
    the coordinator as ``(id: +1 rack: null isFenced: false)``, the JoinGroup/SyncGroup/assignment texts."""
    import json

    from rebalance_lab.observe.formats import render

    real = {_shape(line) for line in (SAMPLES / "evidence-java-client-4.4.0" / "client.log").read_text().splitlines()
            if "[Consumer clientId=" in line and " groupId=" in line}
    def kind(shape: str) -> str:
        return " ".join(shape.split(" ")[:2])

    kinds = {kind(shape) for shape in real}
    recording = [json.loads(line) for line in (SAMPLES / "demo-recording.jsonl").read_text().splitlines()]
    rendered = {_shape(line) for line in render(recording, "client-log") if "instanceId=" not in line}
    compared = {shape for shape in rendered if kind(shape) in kinds}
    assert len(compared) >= 6
    assert compared <= real, sorted(compared - real)


@pytest.mark.parametrize("files", [["server.log"], ["offsets.dump.txt"], ["server.log", "offsets.dump.txt"]],
                         ids=["log", "dump", "both"])
def test_a_real_kip848_groups_evidence_replays_to_each_state_its_clients_settled_in(files: list[str]) -> None:
    """confluent-kafka consumers (``group.protocol=consumer``) on a real 4.4.0 broker: m1, m2 and the static s3
    joined, m2 left, s3 restarted (tests/replay_evidence/kip848.py captured it: server.log at INFO, the group's
    lines; the dump; the clients' settled views). Each source set shows every view, as far as it can tell."""
    from tests.replay_evidence.kip848 import History
    from tests.replay_evidence.kip848 import disagreements as kip848_disagreements

    folder = SAMPLES / "evidence-kip848-4.4.0"
    history = History.read(folder)
    assert len(history.states) == 5
    sources = [source for name in files for source in SOURCES[name]]
    assert kip848_disagreements([folder / name for name in files], sources, history) == []
