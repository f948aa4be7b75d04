"""How many Spark tasks a replay makes: few enough that the JVM's per-task and per-shuffle-segment cost stays small
beside the rows' own work, at least two per core (issue 20's performance; FIDELITY.md)."""

from __future__ import annotations

from rebalance_lab.replay import spark, tasks

#: The 1e6-event input of benchmarks/replay_scale.py: 350 files (hourly broker logs, one dump per offsets partition).
MILLION_EVENT_FILES = 350
MILLION_EVENT_BYTES = 953_274_135


def _sizes(files: int, total: int) -> list[int]:
    return [total // files + (1 if i < total % files else 0) for i in range(files)]


def test_a_million_event_input_is_parsed_in_eight_tasks_and_replayed_in_eight_partitions_on_two_cores() -> None:
    plan = tasks.plan_parse_tasks(_sizes(MILLION_EVENT_FILES, MILLION_EVENT_BYTES), parallelism=2)
    assert len(plan) == 8  # 29 with 32 MB per task
    assert spark.replay_partitions(MILLION_EVENT_BYTES, parallelism=2) == 8  # 46 with 20 MB per partition
    assert sorted(i for chosen in plan for i in chosen) == list(range(MILLION_EVENT_FILES))


def test_the_shuffle_segments_grow_with_the_input_not_with_its_square_at_ten_million_events() -> None:
    total = 10 * MILLION_EVENT_BYTES
    parse_tasks = len(tasks.plan_parse_tasks(_sizes(10 * MILLION_EVENT_FILES, total), parallelism=2))
    partitions = spark.replay_partitions(total, parallelism=2)
    assert (parse_tasks, partitions) == (72, 72)
    assert parse_tasks * partitions < 6_000  # 285 x 455 = 129,675 segments with 32 MB and 20 MB


def test_small_inputs_still_give_each_core_two_tasks() -> None:
    assert len(tasks.plan_parse_tasks(_sizes(142, 95_210_306), parallelism=2)) == 4  # the 1e5-event input
    assert spark.replay_partitions(95_210_306, parallelism=2) == 4
    assert spark.replay_partitions(5 * 2**20, parallelism=8) == 3  # a tiny input: not below 2 MB per partition
