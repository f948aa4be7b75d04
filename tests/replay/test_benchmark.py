"""benchmarks/replay_scale.py at a tiny size, so the script cannot rot: its generator, and the full run."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import replay_scale  # noqa: E402


def test_generated_groups_have_complete_generations_with_consistent_assignments() -> None:
    groups = list(replay_scale.generate(4_000, 40, seed=3))
    assert len(groups) == 40
    evidence = sum(e.get("reason_code") != "member_metadata_change" for events in groups for e in events)
    assert 4_000 <= evidence <= 4_400  # at least the events asked for, and at most a trigger more per group
    for events in groups:
        snapshots = [e for e in events if e["event_type"] == "GENERATION_SNAPSHOT"]
        kinds = Counter(e["event_type"] for e in events)
        assert kinds["JOIN_COMPLETE"] == kinds["SYNC_LEADER_ASSIGNMENT"] == len(snapshots) == kinds["REBALANCE_PREPARE"]
        assert [s["generation"] for s in snapshots] == list(range(1, len(snapshots) + 1))
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
        assert all(3 <= len(s["members"]) <= 10 for s in snapshots)
        for snapshot in snapshots:
            owned = [(p["topic"], p["partition"]) for m in snapshot["members"] for p in m["assignment"]]
            assert len(owned) == len(set(owned))  # never two owners; cooperative rounds may withhold some


def test_a_member_subscribes_with_the_generation_it_last_took_part_in_under_every_protocol() -> None:
    """As Java's ConsumerCoordinator sends it: -1 only before a member's first generation (an eager member owns
    nothing when it rejoins, but keeps its generation). A static member back under a new id keeps its generation."""
    checked = 0
    for events in replay_scale.generate(4_000, 40, seed=3):
        last: dict[str, int] = {}  # member id or instance id -> the generation it last took part in
        for event in events:
            if event["event_type"] != "GENERATION_SNAPSHOT":
                continue
            for member in event["members"]:
                key = member.get("group_instance_id") or member["member_id"]
                assert member["generation"] == last.get(key, -1), (event["group_id"], event["generation"], member)
                checked += member["generation"] >= 0
                last[key] = event["generation"]
    assert checked > 1_000


def test_the_benchmark_runs_end_to_end_at_a_tiny_size(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "replay_scale.py"), "--events", "3000",
                           "--groups", "30", "--work", str(tmp_path), "--spark-tasks", "3,3",
                           "--conf", "spark.shuffle.compress=false"],
                          cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # --runs 5 alternates five such pairs; one keeps the smoke run short
    for expected in ("inputs: ", "spark local[2]: ", "  parsed ", "single process: ", "ratio: ",
                     " CPU-s (driver, JVM, Python workers: JVM ", ", Python ", " = driver ", " + daemon and workers ",
                     "  JVM per stage (task threads; ", " CPU-s (GC ", "cpu: Spark spends ",
                     "runs: 1 alternate pair(s); load average ", "  ratio per pair: ", "goal: Spark >= 1.8x",
                     "outputs agree", "Spark forced to 3 parse tasks and 3 replay partitions", "toArrow: ",
                     "  slots per stage (wall x slots, the tasks' run time, slot-seconds left idle): ", " s x 2 = ",
                     ", tasks ", " slot-s", "Spark settings: spark.shuffle.compress=false", "; build: ",
                     "; machine: the calibration loop took "):
        assert expected in done.stdout, done.stdout
    assert done.stdout.count("machine: the calibration loop took ") == 2  # at the start and beside the goals
    assert " 3 tasks)" in done.stdout.split("JVM per stage")[1].splitlines()[0]  # the forced counts were used
    slots_line = done.stdout.split("  slots per stage")[1].splitlines()[0]
    # each stage of the forced 3 tasks with their run times, in launch order
    assert re.search(r"\(tasks in launch order: \d+\.\d \d+\.\d \d+\.\d s\)", slots_line), slots_line
