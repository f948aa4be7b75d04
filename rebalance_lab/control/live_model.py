"""What the live page knows beyond a group's current view: each rebalance's story, and its sequence of steps.

Built from the coordinator's records as they happen (no I/O): the vote tables come from
``observe.explain`` (each rebalance's ballots, tally, winner and the flavor's tie-break rule), the
sequence diagram's steps from ``observe.sequence`` fed the rows a ``--record`` file would hold. Both keep a
bounded past per group (``explain.HISTORY`` stories; here the newest ``GENERATIONS_KEPT`` diagrams), and
at most ``GROUPS_KEPT`` groups are remembered, the least recently changed forgotten first.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from rebalance_lab.coordinator.classic.records import GroupRecord
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe.explain import Explainer, RebalanceStory
from rebalance_lab.observe.recorder import JsonlRecorder
from rebalance_lab.observe.sequence import Generation, SequenceBuilder

GENERATIONS_KEPT = 2
GROUPS_KEPT = 1_000
STEPS_KEPT = 2_000  # steps of one generation (or awaiting the next) in the sequence builder
LABELS_KEPT = 1_024  # member names per group in the sequence builder, past which the departed are forgotten


class _RowSink:
    """The recorder's JSON lines, read back into rows for the sequence builder (the rows a recording holds)."""

    def __init__(self, builder: SequenceBuilder) -> None:
        self.builder = builder

    def write_line(self, line: str) -> None:
        self.builder.add(json.loads(line))


class LiveModel:
    def __init__(self, world: World) -> None:
        self.explainer = Explainer(world.config.flavor.value)
        self.sequences = SequenceBuilder()
        self._rows = JsonlRecorder(_RowSink(self.sequences), world)
        self._recent: OrderedDict[str, None] = OrderedDict()  # group ids, least recently changed first

    def on_record(self, record: GroupRecord) -> None:
        group_id = record.group_id
        if not group_id:
            return
        self.explainer.on_record(record)
        self._rows.on_record(record)
        self._remember(group_id)

    def _remember(self, group_id: str) -> None:
        self._recent[group_id] = None
        self._recent.move_to_end(group_id)
        while len(self._recent) > GROUPS_KEPT:
            old, _ = self._recent.popitem(last=False)
            self.explainer.groups.pop(old, None)
            self._forget_sequence(old)
        sequence = self.sequences.sequences.get(group_id)
        if sequence is not None and len(sequence.generations) > GENERATIONS_KEPT + 1:
            del sequence.generations[: -(GENERATIONS_KEPT + 1)]
        state = self.sequences._states.get(group_id)  # the builder bounds none of these itself (yet)
        if state is not None and max(len(state.tail), len(state.current.steps)) > STEPS_KEPT:
            # a group whose generation never turns (pending members joining and timing out for ever): start its
            # diagram afresh from the next row rather than keep every step
            self._forget_sequence(group_id)
            return
        if state is not None and len(state.labels) > LABELS_KEPT:
            # the builder names every member id it ever saw (one new id per cycle of a churning group): keep the
            # names of the members still in the group and of the lanes still drawn
            drawn = {lane.key for generation in state.sequence.generations for lane in generation.lanes}
            state.labels = {m: label for m, label in state.labels.items() if m in drawn or m in state.members}

    def _forget_sequence(self, group_id: str) -> None:
        self.sequences.forget(group_id)

    def stories(self, group_id: str) -> list[RebalanceStory]:
        """The group's rebalances that reached a vote, oldest first (not one that left the group Empty: no ballots)."""
        stories = self.explainer.groups.get(group_id)
        return [] if stories is None else [s for s in stories.stories() if s.generation is not None and s.ballots]

    def last_rebalance(self, group_id: str) -> Generation | None:
        """The newest generation's diagram with any steps (a group that only just started has none yet)."""
        sequence = self.sequences.sequences.get(group_id)
        if sequence is None:
            return None
        return next((g for g in reversed(sequence.generations) if g.steps), None)
