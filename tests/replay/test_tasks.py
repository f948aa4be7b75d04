"""The per-task functions of the Spark pipeline, without Spark: parse batches, reports, the combined output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import tables, tasks
from rebalance_lab.replay.diagnostics import ParseReport


def _files(*paths: Path) -> list[pa.RecordBatch]:
    rows = [{"file_idx": i, "path": str(p), "name": p.name} for i, p in enumerate(paths)]
    return pa.Table.from_pylist(rows, schema=tasks.FILES_SCHEMA).to_batches()


def _event(seq: int, event_type: str = "GROUP_EMPTY", group: str = "g", ts: int = 1_000) -> dict[str, Any]:
    return {"schema_version": ev.SCHEMA_VERSION, "source": "emulator", "seq": seq, "ts": ts,
            "cluster_id": "c", "group_id": group, "event_type": event_type}


def _write(path: Path, rows: list[dict[str, Any]], extra: str = "") -> Path:
    path.write_text("".join(ev.to_json(r) + "\n" for r in rows) + extra)
    return path


def test_parse_files_yields_canonical_batches_and_one_report_per_file(tmp_path: Path,
                                                                      monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "BATCH_EVENTS", 3)
    a = _write(tmp_path / "a.jsonl", [_event(i) for i in range(1, 8)], extra="{broken\n")
    b = _write(tmp_path / "b.jsonl", [_event(1, group="h")])
    reports: dict[int, dict[str, Any]] = {}
    batches = list(tasks.parse_files(_files(a, b), tasks.ParseSettings(fmt="emulator"), reports.__setitem__))
    assert all(batch.schema == ev.ARROW_SCHEMA for batch in batches)
    assert [batch.num_rows for batch in batches] == [3, 3, 2]  # batches span files; the rest at the end
    rows = ev.from_arrow(pa.Table.from_batches(batches))
    assert [(r["group_id"], r["seq"]) for r in rows] == [("g", i) for i in range(1, 8)] + [("h", 1)]
    assert rows[0]["source_ref"] == "a.jsonl:1"
    assert reports[0]["events"] == 7 and reports[0]["unparsed"] == 1 and reports[0]["files"] == 1
    assert reports[1]["events"] == 1 and reports[1]["unparsed"] == 0


def test_a_file_of_no_known_format_is_reported_and_the_others_still_parse(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    good = _write(tmp_path / "good.jsonl", [_event(1)])
    reports: dict[int, dict[str, Any]] = {}
    batches = list(tasks.parse_files(_files(junk, good), tasks.ParseSettings(), reports.__setitem__))
    assert sum(b.num_rows for b in batches) == 1
    total = tasks.merge_reports(reports)
    assert (total.files, total.events, total.unparsed) == (2, 1, 1)
    assert total.reasons == {"unknown format": 1}
    assert total.samples[0]["ref"] == "notes.txt"


def test_merge_reports_is_in_file_order_whatever_order_the_tasks_finished_in() -> None:
    first, second = ParseReport(), ParseReport()
    first.unparsable("a:1", "bad", "x")
    second.unparsable("b:1", "bad", "y")
    merged = tasks.merge_reports({1: second.to_dict(), 0: first.to_dict()})
    assert [s["ref"] for s in merged.samples] == ["a:1", "b:1"]


def _rows() -> dict[str, list[dict[str, Any]]]:
    key = {"cluster_id": "c", "group_id": "g"}
    return {
        "group_generations": [{**key, "generation": 1, "leader_id": "m1", "trigger_codes": ["member_join"],
                               "members": [{"member_id": "m1", "assignment": [ev.tp("t", 0)]}]},
                              {**key, "generation": 2, "t_prepare": 5_000_001}],
        "group_summary": [{**key, "events": 7, "triggers": {"member_join": 2}}],
        "whatif_results": [],
    }


def test_combine_carries_every_table_in_one_table_and_split_gives_the_rows_back() -> None:
    combined = tasks.combine(_rows())
    assert combined.schema == tasks.OUTPUT_SCHEMA
    assert combined.column("table").to_pylist() == ["group_generations", "group_generations", "group_summary"]
    for name in tables.TABLES:  # exactly one struct column is set per row
        valid = combined.column(name).is_valid().to_pylist()
        assert valid == [t == name for t in combined.column("table").to_pylist()]
    back = tasks.split(combined)
    assert back["group_generations"][0]["members"][0]["assignment"] == [ev.tp("t", 0)]
    assert back["group_generations"][1]["t_prepare"] == 5_000_001
    assert back["group_summary"][0]["triggers"] == {"member_join": 2}


def test_replay_batches_orders_each_group_and_reports_a_failing_group_as_a_row() -> None:
    shuffled = ev.to_arrow([_event(2, ts=2_000), _event(1, ts=2_000), _event(3, ts=1_000)]).to_batches()
    seen: list[list[int]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        seen.append([e["seq"] for e in events])
        assert topics == [{"topic_partitions": {"t": 1}}]
        return _rows()

    out = pa.Table.from_batches(list(tasks.replay_batches(shuffled, {"c": [{"topic_partitions": {"t": 1}}]},
                                                          ("range",), replay)))
    assert seen == [[3, 1, 2]] and out.num_rows == 3

    def broken(*_: Any, **__: Any) -> dict[str, Any]:
        raise KeyError("leader")

    failed = tasks.split(pa.Table.from_batches(list(tasks.replay_batches(shuffled, {}, (), broken))))
    assert failed == {tasks.ERROR_TABLE: [{"cluster_id": "c", "group_id": "g", "error": "KeyError: 'leader'"}]}


def test_parse_tasks_pack_files_by_size_so_the_cores_finish_together() -> None:
    sizes = [100, 5, 70, 30, 30, 10, 50, 5]
    plan = tasks.plan_parse_tasks(sizes, parallelism=2, task_bytes=1_000)
    assert sorted(i for chosen in plan for i in chosen) == list(range(len(sizes)))  # every file exactly once
    assert len(plan) == 4  # two per core while the bytes are few
    loads = sorted(sum(sizes[i] for i in chosen) for chosen in plan)
    assert loads == [65, 65, 70, 100]  # largest first onto the lightest task
    assert len(tasks.plan_parse_tasks(sizes, parallelism=2, task_bytes=60)) == 5  # 300 bytes / 60 per task
    assert tasks.plan_parse_tasks([7], parallelism=8) == [[0]]  # never more tasks than files
    assert tasks.plan_parse_tasks([], parallelism=2) == []


def test_replay_batches_replays_each_clustered_group_once_across_batch_boundaries() -> None:
    rows = [_event(1, group="a"), _event(2, group="a"), _event(1, group="b"), _event(2, group="b"),
            _event(3, group="b"), _event(1, group="c")]
    batches = ev.to_arrow(rows).to_batches(max_chunksize=4)  # group b spans two batches
    seen: list[tuple[str, list[int]]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        if events[0]["group_id"] == "c":
            raise RuntimeError("boom")
        seen.append((events[0]["group_id"], [e["seq"] for e in events]))
        return {"group_summary": [{"cluster_id": "c", "group_id": events[0]["group_id"], "events": len(events)}]}

    out = tasks.split(pa.Table.from_batches(list(tasks.replay_batches(batches, {}, (), replay))))
    assert seen == [("a", [1, 2]), ("b", [1, 2, 3])]
    assert [(r["group_id"], r["events"]) for r in out["group_summary"]] == [("a", 2), ("b", 3)]
    assert out[tasks.ERROR_TABLE] == [{"cluster_id": "c", "group_id": "c", "error": "RuntimeError: boom"}]

    unclustered = ev.to_arrow([_event(1, group="a"), _event(1, group="b"), _event(2, group="a")]).to_batches()
    with pytest.raises(ValueError, match="not clustered"):
        list(tasks.replay_batches(unclustered, {}, (), replay))
