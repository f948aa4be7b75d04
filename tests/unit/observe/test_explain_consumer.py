"""KIP-848 consumer groups as per-epoch stories (issue 19, item 1): why the epoch bumped, the group state
changes (Kafka 4.4.0 ConsumerGroup.maybeUpdateGroupState), the target, what each member revoked first, and the
block told when the epoch is reconciled; driven by the consumer coordinator on a manual clock."""

from __future__ import annotations

import io

from rebalance_lab.observe.narrator import WIDTH, Narrator
from tests.unit.consumer.context import Ctx, foo


class Told:
    def __init__(self) -> None:
        self.ctx = Ctx()
        self.out = io.StringIO()
        self.narrator = Narrator(self.out, lambda: 0, colour=False)
        self._fed = 0

    def text(self) -> str:
        for record in self.ctx.records[self._fed:]:
            self.narrator.on_record(record)
        self._fed = len(self.ctx.records)
        return " ".join(self.out.getvalue().split())


def test_an_epoch_story_holds_the_reason_states_target_revocations_and_the_reconciled_block() -> None:
    t = Told()
    t.ctx.join("A")
    t.ctx.advance(2_000)  # past the 4.4 assignment interval
    t.ctx.join("B")
    t.ctx.hb("A", 2)
    t.ctx.ack("A", 2, foo(0, 1, 2))
    t.ctx.hb("B", 3)
    text = t.text()
    story = t.narrator.consumer_explainer.group("g").stories()[-1]
    assert (story.epoch, story.reason, story.member_id, story.assignor) == (3, "member_join", "B", "uniform")
    assert [(a, b) for _, a, b in story.states] == [("Stable", "Assigning"), ("Assigning", "Reconciling"),
                                                    ("Reconciling", "Stable")]
    assert story.target == {"A": {("foo", p) for p in (0, 1, 2)}, "B": {("foo", p) for p in (3, 4, 5)}}
    assert story.revoked == {"A": {("foo", p) for p in (3, 4, 5)}} and story.moved == story.target["B"]
    assert story.reconciled_ms is not None and story.to_dict()["moved"] == [["foo", 3], ["foo", 4], ["foo", 5]]
    assert "group state Stable -> Assigning" in text and "group state Reconciling -> Stable" in text
    assert "epoch 3 reconciled in 0 ms: every member owns its target (uniform assignor)" in text
    assert "A foo[0-2] (revoked foo[3-5] first)" in text and "moved: foo[3-5]" in text
    assert all(len(line) <= WIDTH for line in t.out.getvalue().splitlines())


def test_a_join_shows_no_passing_state_before_its_epoch_bump() -> None:
    t = Told()
    t.ctx.join("A")
    text = t.text()
    # the member joins, the epoch bumps and the target is computed in one heartbeat: Empty goes to Assigning
    assert "group state Empty -> Assigning" in text and "Empty -> Stable" not in text
