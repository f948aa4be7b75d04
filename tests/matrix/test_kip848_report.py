"""The KIP-848 section of docs/client-matrix.md survives the classic matrix's rewrite, and replaces itself."""

from __future__ import annotations

from pathlib import Path

from tests.matrix import kip848_report, report


def _kip848_result(target: str, regex: str | None) -> kip848_report.Result:
    heartbeat = {"versions": [1], "own_member_id_on_join": True, "first_epoch": 2, "server_assignor": "uniform",
                 "rebalance_timeout_ms": 300000, "regex": regex, "leave_epochs": [-1], "leave_owned": [],
                 "errors": []}
    return kip848_report.Result(
        client="confluent-kafka", target=target, version="2.16.1", assignor="uniform", assignors=("uniform",),
        api_versions={"ConsumerGroupHeartbeat": [1], "Metadata": [13]}, heartbeat=heartbeat, failure=None,
        timings={"join": 2.0, "leave": 1.0, "crash": 6.0}, produced=180, consumed=180, reads=200, build_s=0.0,
        notes="")


def _classic_result() -> report.ClientResult:
    return report.ClientResult(name="aiokafka", version="0.14.0", assignor="sticky", protocols=("sticky",),
                               api_versions={"JoinGroup": [5]}, failure=None, timings={}, produced=180, consumed=180,
                               reads=180, build_s=0.0, notes="")


def test_the_classic_rewrite_keeps_the_kip848_section(tmp_path: Path) -> None:
    doc = tmp_path / "client-matrix.md"
    report.write(doc, [_classic_result()])
    kip848_report.write(doc, [_kip848_result("emulator", "")], {"kafkajs 2.2.4": "classic only"})
    report.write(doc, [_classic_result()])
    text = doc.read_text()
    assert text.count(kip848_report.BEGIN) == 1 and text.count(kip848_report.END) == 1
    assert "| aiokafka | 0.14.0 |" in text and "| confluent-kafka | 2.16.1 | emulator |" in text


def test_a_new_kip848_run_replaces_the_old_section_and_tells_an_empty_regex_from_null(tmp_path: Path) -> None:
    doc = tmp_path / "client-matrix.md"
    report.write(doc, [_classic_result()])
    kip848_report.write(doc, [_kip848_result("emulator", "")], {})
    kip848_report.write(doc, [_kip848_result("real-kafka-4", None)], {})
    text = doc.read_text()
    assert text.count(kip848_report.BEGIN) == 1
    assert "| confluent-kafka | real-kafka-4 |" in text and "| emulator |" not in text
    assert '| null |' in text and '`""`' not in text
    assert "| aiokafka | 0.14.0 |" in text
