"""The per-epoch history of a KIP-848 consumer group (``GET /groups/{id}/history``), from the core's records."""

from __future__ import annotations

from rebalance_lab.control.epoch_history import EpochHistory
from tests.unit.consumer.context import Ctx, foo


def tps(*partitions: int) -> list[dict[str, object]]:
    return [{"topic": "foo", "partition": p} for p in partitions]


def feed(ctx: Ctx, history: EpochHistory) -> None:
    for record in ctx.last:
        history.on_record(record)


def test_each_epoch_has_its_reason_target_and_the_time_every_member_was_stable_at_it() -> None:
    ctx, history = Ctx(), EpochHistory()
    ctx.join("A")
    feed(ctx, history)
    ctx.advance(2_000)
    ctx.join("B")
    feed(ctx, history)
    ctx.now = 2_500
    ctx.ack("A", 2, foo(0, 1, 2))
    feed(ctx, history)
    assert history.of("g")[-1]["stable_ms"] is None  # B has not got its partitions yet
    ctx.now = 3_000
    ctx.hb("B", 3)
    feed(ctx, history)
    first, second = history.of("g")
    assert first == {"type": "consumer", "epoch": 2, "started_ms": 0, "reason": "member_join", "member_id": "A",
                     "assignor": "uniform", "target": {"A": tps(0, 1, 2, 3, 4, 5)}, "stable_ms": 0}
    assert second == {"type": "consumer", "epoch": 3, "started_ms": 2_000, "reason": "member_join", "member_id": "B",
                      "assignor": "uniform", "target": {"A": tps(0, 1, 2), "B": tps(3, 4, 5)}, "stable_ms": 3_000}


def test_a_fenced_member_leaves_the_target_and_an_empty_group_resets_it() -> None:
    ctx, history = Ctx(), EpochHistory()
    ctx.join("A")
    feed(ctx, history)
    ctx.advance(45_000)
    feed(ctx, history)
    last = history.of("g")[-1]
    assert (last["epoch"], last["reason"], last["member_id"], last["assignor"], last["target"]) == (
        3, "session_timeout", "A", None, {})
    assert history.of("other") == []
