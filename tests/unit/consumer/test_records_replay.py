"""The consumer group's records are rbl-event/1 rows the replay reads back as KIP-848 epochs."""

from __future__ import annotations

import json

from rebalance_lab.coordinator.consumer import records as r
from rebalance_lab.coordinator.consumer.apply import apply
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.replay.events import from_json
from rebalance_lab.replay.timeline import fold

from .context import Ctx


def scenario() -> Ctx:
    ctx = Ctx()
    ctx.stable_pair()
    ctx.advance(1_000)
    ctx.leave("B")
    ctx.advance(1_000)
    ctx.hb("A", 3)
    return ctx


def test_every_record_with_an_event_type_is_a_valid_event_row() -> None:
    ctx = scenario()
    rows = [json.dumps(rec.to_event(i), default=str) for i, rec in enumerate(ctx.records) if rec.event_type]
    events = [from_json(row) for row in rows]
    assert {e["group_kind"] for e in events} == {"consumer"}
    assert [e["event_type"] for e in events][:4] == ["MEMBER_JOINED", "K848_EPOCH_BUMP", "K848_TARGET_COMPUTED",
                                                     "K848_MEMBER_STATE"]


def test_the_replay_folds_the_recording_into_one_generation_per_epoch() -> None:
    ctx = scenario()
    events = [from_json(json.dumps(rec.to_event(i), default=str)) for i, rec in enumerate(ctx.records)
              if rec.event_type]
    timeline = fold(events)
    epochs = timeline.sorted_generations()
    assert [g.generation for g in epochs if g.kip848] == [2, 3, 4]
    third = timeline.generations[3]
    assert third.reconciled and third.protocol == "uniform"
    assert {m.member_id: m.assignment for m in third.members or []} == {
        "A": (("foo", 0), ("foo", 1), ("foo", 2)), "B": (("foo", 3), ("foo", 4), ("foo", 5))}


def test_replaying_the_records_rebuilds_the_group() -> None:
    ctx = scenario()
    rebuilt = ConsumerGroup("g")
    for record in ctx.records:
        if not isinstance(record, (r.GroupCreated, r.GroupDeleted)):
            apply(rebuilt, record)
    view = ctx.view()
    assert (rebuilt.group_epoch, rebuilt.assignment_epoch, list(rebuilt.members)) == (
        view.group_epoch, view.assignment_epoch, [m.member_id for m in view.members])
    assert rebuilt.members["A"].assigned == ctx.coordinator._core.groups["g"].members["A"].assigned
