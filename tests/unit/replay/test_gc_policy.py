"""The replay runs with the cyclic garbage collector off (gcpolicy.batch_gc): safe only while the
parse and the model create no reference cycles, which these tests check."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay import local, parquet_plain
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.engine import run_local_engine
from rebalance_lab.replay.gcpolicy import batch_gc
from rebalance_lab.replay.model import replay_group
from rebalance_lab.replay.sources import SourceContext, parse_file
from rebalance_lab.replay.timeline import ordered

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))

import replay_scale  # noqa: E402

WHATIF = ("range", "roundrobin", "sticky", "cooperative-sticky", "static", "cooperative-sticky+static")


def _cyclic_garbage_after(work: object) -> int:
    """Cyclic garbage ``work`` leaves when it runs with the collector off, the second time: the first run
    imports what the adapters load lazily (msgspec, numpy via pyarrow), and an import leaves garbage of its own."""
    work()  # type: ignore[operator]
    gc.collect()
    with batch_gc():
        assert not gc.isenabled()
        work()  # type: ignore[operator]
        found = gc.collect()  # an explicit collection still runs while automatic ones are off
    assert gc.isenabled()
    return found


def test_replaying_groups_of_every_kind_with_every_whatif_creates_no_reference_cycles() -> None:
    groups = list(replay_scale.generate(6_000, 30, seed=11))  # joins, leaves, expiries, static restarts, storms

    def replay_all() -> None:
        for events in groups:
            result = replay_group(ordered(events), [], whatif=WHATIF)
            assert result["whatif_results"] and result["partition_moves"]

    assert _cyclic_garbage_after(replay_all) == 0


def test_replaying_a_kip_848_group_from_its_log_and_dump_creates_no_reference_cycles() -> None:
    samples = Path(__file__).parent / "samples"
    report = ParseReport()
    events = [e for name in ("kafka-4.4-consumer-group.log", "kafka-4.4-consumer-group.dump.txt")
              for e in parse_file(str(samples / name), "auto", SourceContext(name=name, report=report))
              if e.get("group_id")]

    def replay_it() -> None:
        result = replay_group(ordered(events), [], whatif=WHATIF)
        assert result["partition_moves"] and result["rebalance_episodes"]

    assert _cyclic_garbage_after(replay_it) == 0


def test_parsing_rendered_broker_logs_and_dumps_creates_no_reference_cycles(tmp_path: Path) -> None:
    files, _ = replay_scale.write_inputs(tmp_path / "work", 3_000, 15, seed=5, mode="rendered")

    def parse_all() -> None:
        report = ParseReport()
        events = [e for f in files for e in parse_file(str(f), "auto", SourceContext(name=f.name, report=report))]
        assert len(events) > 2_000

    assert _cyclic_garbage_after(parse_all) == 0


def test_batch_gc_freezes_what_was_alive_and_leaves_what_it_made_old() -> None:
    with batch_gc():
        assert gc.get_freeze_count() > 0
        made = [[i] for i in range(50_000)]
        assert gc.get_count()[0] >= 40_000  # young: the first collection after enabling would walk them all
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 1_000  # the batch's survivors are not young: no collection walks them soon
    del made
    gc.disable()
    try:
        with batch_gc():
            pass
        assert not gc.isenabled()  # a disabled collector stays disabled
    finally:
        gc.enable()


def _replayed_samples() -> tuple[list[dict[str, object]], dict[str, list[dict[str, object]]]]:
    samples = Path(__file__).parent / "samples"
    report = ParseReport()
    files = [samples / "kafka-4.4-consumer-group.log", samples / "kafka-4.4-consumer-group.dump.txt"]
    options = {"tz": "UTC", "cluster_id": "default", "broker_id": None, "options": {}}
    parsed = local.parse_inputs(files, "auto", options, report)
    groups, topics = local.split_groups(parsed)
    rows, _ = local.replay_all(groups, topics, WHATIF, None)
    return parsed, rows


@pytest.mark.parametrize("writer", ["plain", "arrow"])
def test_writing_the_tables_creates_no_reference_cycles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        writer: str) -> None:
    """The single-process runners write with the collector off (local.replay_and_write), with either writer."""
    parsed, rows = _replayed_samples()
    if writer == "arrow":
        monkeypatch.setattr(parquet_plain, "PLAIN_MAX_ROWS", 0)

    def write() -> None:
        local.write_tables(tmp_path / "out", rows, parsed)
        assert (tmp_path / "out" / "events" / "part-0.parquet").stat().st_size > 0

    assert _cyclic_garbage_after(write) == 0


def test_both_local_runners_parse_replay_and_write_with_the_collector_off(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_local`` and the CLI's local engine (which once ran every phase with the collector on) alike."""
    seen: dict[str, set[bool]] = {}

    def spy(name: str, function: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, set()).add(gc.isenabled())
            return function(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(local, "parse_file", spy("parse", local.parse_file))
    monkeypatch.setattr(local, "replay_group", spy("replay", local.replay_group))
    monkeypatch.setattr(local, "write_tables", spy("write", local.write_tables))
    samples = Path(__file__).parent / "samples"
    files = [str(samples / "kafka-4.4-consumer-group.log"), str(samples / "kafka-4.4-consumer-group.dump.txt")]
    outcome = run_local_engine(files, fmt="auto", tz="UTC", cluster_id="default", whatif=("range",),
                               out_dir=tmp_path / "cli", events_jsonl=False, inputs=files)
    assert outcome.events > 0 and seen == {"parse": {False}, "replay": {False}, "write": {False}}
    seen.clear()
    result = local.run_local(files, whatif=("range",), out_dir=tmp_path / "api")
    assert result.events == outcome.events and seen == {"parse": {False}, "replay": {False}, "write": {False}}
    assert gc.isenabled()
