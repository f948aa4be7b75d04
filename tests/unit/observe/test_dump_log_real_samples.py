"""``export --as dump-log`` / ``dump-log-3`` write what real Kafka 4.4.0 / 3.9.2 brokers' segments dump to.

The samples are one run of tests/replay_evidence: kafka-dump-log --offsets-decoder of a group that real
kafka-python consumers took through 14+ generations (tests/unit/replay/samples/evidence-kafka-*). The
group's records, read from the real dump, are rendered again and must give the real dump back line for
line: batch headers (sequence, sizes, positions, CRCs), record lines, every payload field. Before issue 20
the exporter wrote ``sequence: -1`` for 4.4.0, no record for the 4.x group's creation, and every
subscription as a Java client's version 3 with null user data where kafka-python sends version 0 with
empty user data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rebalance_lab.observe.formats import render
from rebalance_lab.replay.events import to_json
from rebalance_lab.replay.sources import SourceContext, parse_file

SAMPLES = Path(__file__).resolve().parents[1] / "replay" / "samples"
FORMAT = {"4.4.0": "dump-log", "3.9.2": "dump-log-3"}


def real_and_rendered(version: str) -> tuple[list[str], list[str]]:
    folder = SAMPLES / f"evidence-kafka-{version}"
    dump = folder / "offsets.dump.txt"
    real = dump.read_text().splitlines()
    path = real[0].removeprefix("Dumping ").rsplit("/", 2)[0]  # the log dir the capture had
    events = [json.loads(to_json(e)) for e in parse_file(dump, "dump-log", SourceContext())]
    return real, list(render(events, FORMAT[version], log_dir=path))


@pytest.mark.parametrize("version", list(FORMAT))
def test_the_exported_dump_is_the_real_brokers_dump_line_for_line(version: str) -> None:
    real, rendered = real_and_rendered(version)
    assert len(real) >= 2 + 2 * 15
    assert rendered == real


def test_4_x_writes_sequence_0_and_a_record_at_creation_3_x_neither() -> None:
    for version, sequence, first_generation in (("4.4.0", "0", 0), ("3.9.2", "-1", 1)):
        real, _ = real_and_rendered(version)
        records = [line for line in real if line.startswith("| offset: ")]
        assert {re.search(r" sequence: (-?\d+) ", line)[1] for line in records} == {sequence}  # type: ignore[index]
        assert json.loads(records[0].split(" payload: ")[1])["data"]["generation"] == first_generation


def test_a_kafka_python_group_of_the_demo_exports_with_the_real_subscription_and_assignment_forms() -> None:
    """The emulator's own recording (kafka-python consumers): each member's subscription and assignment JSON has
    exactly the keys and user data of the real 4.4.0 dump's kafka-python members."""
    real, _ = real_and_rendered("4.4.0")

    def forms(lines: list[str]) -> set[str]:
        found = set()
        for line in lines:
            if line.startswith("| offset: ") and '"members":[{' in line:
                for member in json.loads(line.split(" payload: ")[1])["data"]["members"]:
                    found.add(json.dumps({part: {k: (v if k == "userData" else type(v).__name__)
                                                 for k, v in member[part].items()}
                                          for part in ("subscription", "assignment")}, sort_keys=True))
        return found

    demo = [json.loads(line) for line in (SAMPLES / "demo-recording.jsonl").read_text().splitlines()]
    rendered = list(render(demo, "dump-log"))
    assert forms(rendered) == forms(real) and len(forms(real)) == 1
    first = json.loads(next(line for line in rendered if line.startswith("| ")).split(" payload: ")[1])["data"]
    assert (first["generation"], first["protocolType"], first["members"]) == (0, "", [])  # the group's creation
