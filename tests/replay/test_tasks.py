"""The per-task functions of the Spark pipeline, without Spark: parse, replay, part files and their commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rebalance_lab.replay import events as ev
from rebalance_lab.replay import parts, tables, tasks
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.parts import Part, PartWriter


def _files(*paths: Path) -> list[pa.RecordBatch]:
    rows = [{"file_idx": i, "path": str(p), "name": p.name} for i, p in enumerate(paths)]
    return pa.Table.from_pylist(rows, schema=tasks.FILES_SCHEMA).to_batches()


def _event(seq: int, event_type: str = "GROUP_EMPTY", group: str = "g", ts: int = 1_000) -> dict[str, Any]:
    return {"schema_version": ev.SCHEMA_VERSION, "source": "emulator", "seq": seq, "ts": ts,
            "cluster_id": "c", "group_id": group, "event_type": event_type}


def _write(path: Path, rows: list[dict[str, Any]], extra: str = "") -> Path:
    path.write_text("".join(ev.to_json(r) + "\n" for r in rows) + extra)
    return path


def _parse(paths: list[Path], staging: Path, settings: tasks.ParseSettings,
           reports: dict[int, dict[str, Any]]) -> tuple[pa.Table, list[Part]]:
    out = pa.Table.from_batches(list(tasks.parse_files(_files(*paths), settings, reports.__setitem__,
                                                       PartWriter(staging, 3, 1))), schema=tasks.PARSED_SCHEMA)
    written = parts.parts_of(out.filter(pc.is_valid(out.column("path"))).select(parts.PARTS_SCHEMA.names))
    return out.filter(pc.is_valid(out.column("events"))), written


def test_parse_files_writes_the_events_and_yields_each_groups_events_and_one_report_per_file(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "BATCH_EVENTS", 3)
    a = _write(tmp_path / "a.jsonl", [_event(i) for i in range(1, 8)], extra="{broken\n")
    b = _write(tmp_path / "b.jsonl", [_event(1, group="h"), _event(2, "TOPIC_METADATA", group="h")])
    reports: dict[int, dict[str, Any]] = {}
    groups, written = _parse([a, b], tmp_path / "staging", tasks.ParseSettings(fmt="emulator"), reports)
    assert [(p.table, p.rows, p.task) for p in written] == [("events", 9, 3)]
    assert written[0].path == str(tmp_path / "staging" / "events" / "part-00003-1.parquet")
    events = ev.from_arrow(pq.read_table(written[0].path))
    assert [(r["group_id"], r["seq"]) for r in events] == [("g", i) for i in range(1, 8)] + [("h", 1), ("h", 2)]
    assert events[0]["source_ref"] == "a.jsonl:1"
    assert pq.ParquetFile(written[0].path).metadata.num_row_groups == 3  # written as it went, 3 events at a time
    columns = [groups.column(n).to_pylist() for n in ("cluster_id", "group_id", "events")]
    by_key = {(c, g): tasks.unpack_events(blob) for c, g, blob in zip(*columns, strict=True)}
    assert sorted(by_key) == [("c", "g"), ("c", "h")]
    assert [e["seq"] for e in by_key[("c", "g")]] == list(range(1, 8))
    # TOPIC_METADATA is the cluster's, not the group's: it is left beside the parts, for every replay task to read
    assert [p.name for p in (tmp_path / "staging" / tasks.TOPICS_DIR).iterdir()] == ["part-00003-1.events"]
    assert [(e["event_type"], e["seq"]) for e in tasks.read_topics(tmp_path / "staging")["c"]] == [
        ("TOPIC_METADATA", 2)]
    assert reports[0]["events"] == 7 and reports[0]["unparsed"] == 1 and reports[0]["files"] == 1
    assert reports[1]["events"] == 2 and reports[1]["unparsed"] == 0


def test_a_file_of_no_known_format_is_reported_and_the_others_still_parse(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nworld\n")
    good = _write(tmp_path / "good.jsonl", [_event(1)])
    reports: dict[int, dict[str, Any]] = {}
    groups, written = _parse([junk, good], tmp_path / "staging", tasks.ParseSettings(), reports)
    assert groups.num_rows == 1 and [p.rows for p in written] == [1]
    total = tasks.merge_reports(reports)
    assert (total.files, total.events, total.unparsed) == (2, 1, 1)
    assert total.reasons == {"unknown format": 1}
    assert total.samples[0]["ref"] == "notes.txt"


def test_a_parse_task_that_fails_leaves_no_part_file(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "BATCH_EVENTS", 1)
    good = _write(tmp_path / "good.jsonl", [_event(1), _event(2)])

    def failing(*_: Any) -> None:
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):  # after two events were written
        list(tasks.parse_files(_files(good), tasks.ParseSettings(), failing, PartWriter(tmp_path / "s", 0)))
    assert (tmp_path / "s" / "events").is_dir() and list((tmp_path / "s").rglob("*.parquet*")) == []


def test_every_replay_task_reads_each_parse_tasks_topics_once_whichever_attempts_left_them(tmp_path: Path) -> None:
    def leave(task: int, attempt: int, events: list[dict[str, Any]]) -> None:
        tasks.write_topics(PartWriter(tmp_path, task, attempt), events)

    topic = _event(1, "TOPIC_METADATA", group=None, ts=5_000)  # type: ignore[arg-type]
    leave(0, 0, [{**topic, "topic_partitions": {"t": 3}}])
    leave(0, 1, [{**topic, "topic_partitions": {"t": 3}}])  # a retried (or speculative) attempt: the same events
    leave(1, 0, [{**topic, "seq": 2, "ts": 1_000, "topic_partitions": {"t": 1}},
                 {**topic, "seq": 3, "cluster_id": "other", "topic_partitions": {"u": 2}}])
    leave(2, 0, [])  # a task that found none leaves no file
    (tmp_path / tasks.TOPICS_DIR / "part-00003-0.events.inprogress").write_bytes(b"a task still writing")
    found = tasks.read_topics(tmp_path)
    assert {cluster: [e["topic_partitions"] for e in events] for cluster, events in found.items()} == {
        "c": [{"t": 1}, {"t": 3}], "other": [{"u": 2}]}  # in time order
    assert sorted(p.name for p in (tmp_path / tasks.TOPICS_DIR).iterdir()) == [
        "part-00000-0.events", "part-00000-1.events", "part-00001-0.events", "part-00003-0.events.inprogress"]
    assert tasks.read_topics(tmp_path / "nothing-parsed") == {}


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


def _groups(*runs: tuple[str, list[dict[str, Any]]], rows_per_batch: int = 100,
            parse_parts: tuple[Part, ...] = ()) -> list[pa.RecordBatch]:
    """PARSED_SCHEMA rows: the parse tasks' part rows, then one per (group, events) given, in the order given."""
    rows = [{**p.__dict__} for p in parse_parts]
    rows += [{"cluster_id": "c", "group_id": group, "events": tasks.pack_events(events)} for group, events in runs]
    return pa.Table.from_pylist(rows, schema=tasks.PARSED_SCHEMA).to_batches(max_chunksize=rows_per_batch)


def _replay(batches: list[pa.RecordBatch], staging: Path, topics: dict[str, list[dict[str, Any]]],
            replay: Any, whatif: tuple[str, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    out = pa.Table.from_batches(list(tasks.replay_groups(batches, topics, whatif, PartWriter(staging, 0), replay)))
    return {p.table: tables.from_arrow(pq.read_table(p.path)) for p in parts.parts_of(out) if p.table != "events"}


def test_replay_groups_writes_every_table_and_reports_a_failing_group_as_a_row(tmp_path: Path) -> None:
    shuffled = _groups(("g", [_event(2, ts=2_000)]), ("g", [_event(1, ts=2_000), _event(3, ts=1_000)]))
    seen: list[list[int]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        seen.append([e["seq"] for e in events])
        assert topics == [{"topic_partitions": {"t": 1}}]
        return _rows()

    out = _replay(shuffled, tmp_path / "a", {"c": [{"topic_partitions": {"t": 1}}]}, replay, ("range",))
    assert sorted(seen[0]) == [1, 2, 3]
    assert sorted(out) == ["group_generations", "group_summary"]  # a table without rows gets no file
    assert out["group_generations"][0]["members"][0]["assignment"] == [ev.tp("t", 0)]
    assert out["group_generations"][1]["t_prepare"] == 5_000_001
    assert out["group_summary"][0]["triggers"] == {"member_join": 2}

    def broken(*_: Any, **__: Any) -> dict[str, Any]:
        raise KeyError("leader")

    failed = _replay(shuffled, tmp_path / "b", {}, broken)
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


def test_replay_groups_replays_each_clustered_group_once_across_batch_boundaries(tmp_path: Path,
                                                                                monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "BATCH_ROWS", 1)
    parsed = (Part("events", "/staging/parse/events/part-00000-0.parquet", 5, 0),
              Part("events", "/staging/parse/events/part-00001-2.parquet", 4, 1))
    batches = _groups(("a", [_event(1, group="a"), _event(2, group="a")]), ("b", [_event(1, group="b")]),
                      ("b", [_event(2, group="b"), _event(3, group="b")]), ("c", [_event(1, group="c")]),
                      rows_per_batch=2, parse_parts=parsed)  # group b spans two batches
    seen: list[tuple[str, list[int]]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        if events[0]["group_id"] == "c":
            raise RuntimeError("boom")
        seen.append((events[0]["group_id"], [e["seq"] for e in events]))
        return {"group_summary": [{"cluster_id": "c", "group_id": events[0]["group_id"], "events": len(events)}]}

    yielded = parts.parts_of(pa.Table.from_batches(
        list(tasks.replay_groups(batches, {}, (), PartWriter(tmp_path / "p", 0), replay))))
    assert [p for p in yielded if p.table == "events"] == list(parsed)  # the parse's parts pass through
    seen.clear()
    out = _replay(batches, tmp_path / "s", {}, replay)
    assert seen == [("a", [1, 2]), ("b", [1, 2, 3])]
    assert [(r["group_id"], r["events"]) for r in out["group_summary"]] == [("a", 2), ("b", 3)]
    assert out[tasks.ERROR_TABLE] == [{"cluster_id": "c", "group_id": "c", "error": "RuntimeError: boom"}]



def test_replay_groups_gathers_a_groups_rows_from_anywhere_in_the_partition_and_replays_groups_in_key_order(
        tmp_path: Path) -> None:
    seen: list[tuple[str, list[int]]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        seen.append((events[0]["group_id"], [e["seq"] for e in events]))
        return {"group_summary": [{"cluster_id": "c", "group_id": events[0]["group_id"], "events": len(events)}]}

    # no JVM sort before the task: a group's rows (one per parse task that saw it) come in shuffle order
    unsorted = _groups(("b", [_event(2, group="b")]), ("a", [_event(1, group="a")]), ("b", [_event(1, group="b")]),
                       ("a", [_event(3, group="a"), _event(2, group="a")]), rows_per_batch=3)
    out = _replay(unsorted, tmp_path / "u", {}, replay)
    assert [(group, sorted(seqs)) for group, seqs in seen] == [("a", [1, 2, 3]), ("b", [1, 2])]
    assert [(r["group_id"], r["events"]) for r in out["group_summary"]] == [("a", 3), ("b", 2)]


def test_a_group_reaches_the_model_in_one_order_whatever_order_the_shuffle_brought_its_rows_in(
        tmp_path: Path) -> None:
    # The task does not sort a group's events (the model's fold sorts them by a total key), but it puts the
    # group's rows in an order of their own, so the model's input does not depend on the shuffle.
    seen: list[list[int]] = []

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        seen.append([e["seq"] for e in events])
        return {}

    rows = [("g", [_event(seq)]) for seq in (4, 1, 3)] + [("g", [_event(2), _event(5)])]
    for attempt, order in enumerate(((0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1))):
        _replay(_groups(*(rows[i] for i in order), rows_per_batch=2), tmp_path / str(attempt), {}, replay)
    assert seen[0] == seen[1] == seen[2]
    assert sorted(seen[0]) == [1, 2, 3, 4, 5]


def test_a_replay_task_that_fails_leaves_no_part_file_behind(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(tasks, "BATCH_ROWS", 1)  # group a's rows are written before group b fails

    def replay(events: list[dict[str, Any]], topics: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        if events[0]["group_id"] == "b":
            raise SystemExit("the worker is told to stop")  # not one group's error: the task fails
        return {"group_summary": [{"cluster_id": "c", "group_id": "a", "events": 1}]}

    batches = _groups(("a", [_event(1, group="a")]), ("b", [_event(1, group="b")]))
    with pytest.raises(SystemExit):
        list(tasks.replay_groups(batches, {}, (), PartWriter(tmp_path / "f", 0), replay))
    assert list((tmp_path / "f").rglob("*.parquet*")) == []  # the failed task's started file is gone


def test_commit_keeps_the_successful_attempts_files_and_gives_an_empty_table_its_schema(tmp_path: Path) -> None:
    staging, out = tmp_path / "staging", tmp_path / "out"
    schema = tables.TABLES["group_summary"]
    row = {"cluster_id": "c", "group_id": "g", "events": 1}
    attempts = []
    for task, attempt in ((0, 0), (0, 1), (1, 0)):
        writer = PartWriter(staging, task, attempt)
        writer.write("group_summary", tables.to_arrow("group_summary", [{**row, "events": 10 * task + attempt}]))
        attempts.append(writer.close()[0])
    (out / "group_summary").mkdir(parents=True)
    (out / "group_summary" / "part-00009.parquet").write_text("from an earlier run")
    counts = parts.commit(out, [attempts[1], attempts[2]], {"group_summary": schema, tasks.ERROR_TABLE:
                                                            tasks.ERROR_SCHEMA})
    assert counts == {"group_summary": 2, tasks.ERROR_TABLE: 0}
    assert sorted(p.name for p in (out / "group_summary").iterdir()) == ["_SUCCESS", "part-00000.parquet",
                                                                          "part-00001.parquet"]
    assert [r["events"] for r in tables.from_arrow(pq.read_table(out / "group_summary"))] == [1, 10]
    empty = pq.read_table(out / tasks.ERROR_TABLE)
    assert empty.num_rows == 0 and empty.schema == tasks.ERROR_SCHEMA
    assert Path(attempts[0].path).exists()  # the losing attempt's file stays in staging, removed with it
    with pytest.raises(ValueError, match="two part files for task 0"):
        parts.commit(out, [attempts[0], attempts[0]], {"group_summary": schema})
