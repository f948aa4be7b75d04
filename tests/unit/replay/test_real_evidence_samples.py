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
