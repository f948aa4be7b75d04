"""Sequence-diagram model of a group's rebalances, built from ``rbl-event/1`` rows (docs/event-schema.md).

One :class:`GroupSequence` per group: its generations (a classic group's generations, a KIP-848 consumer
group's group epochs), each with lanes (the coordinator first, then the members in the order they appear)
and steps in recording order: :class:`Message` arrows (a request to the coordinator or its answer) and
:class:`Note` boxes (a rebalance starting, a vote, a session expiring).

A generation's diagram is the rebalance that formed it: the rows that caused it (a join, a rejoin, a
leave, an expiry written after the previous generation settled) move into it, so "generation 3" starts
with the member that left generation 2. Rows after the last generation settled stay in it.

The recording has one row per coordinator step, not per request, so some arrows are inferred from the
rows and marked ``inferred``: a follower's SyncGroup (only the leader's is recorded), the Heartbeat answered
REBALANCE_IN_PROGRESS through which a member of the previous generation learnt of the rebalance before it
rejoined (Kafka's ``GroupCoordinator.handleHeartbeat``; it may equally have been a SyncGroup or OffsetCommit
answered so), and the JoinGroup and SyncGroup answers, drawn when the rows that complete them are written.

Feed rows with :meth:`SequenceBuilder.add` (live, as a recorder writes them, or from a recording file with
:func:`build`); :meth:`GroupSequence.to_dict` is the JSON form for a web page. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rebalance_lab.observe.sequence_model import (
    CLASSIC,
    CONSUMER,
    COORDINATOR,
    Generation,
    GroupSequence,
    Lane,
    Message,
    Note,
    Step,
    short,
)
from rebalance_lab.observe.sequence_rules import GroupState, steps_of

__all__ = ["CLASSIC", "CONSUMER", "COORDINATOR", "Generation", "GroupSequence", "Lane", "Message", "Note",
           "SequenceBuilder", "Step", "build", "short"]

# Rows that start a new generation's diagram, and rows after which the generation is settled (what follows
# them is the cause of the next generation, until one starts).
_STARTS = frozenset({"REBALANCE_PREPARE", "K848_EPOCH_BUMP", "GROUP_LOADED"})
_SETTLES = frozenset({"JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT", "GENERATION_SNAPSHOT", "GROUP_EMPTY",
                      "K848_TARGET_COMPUTED", "K848_MEMBER_STATE"})
_CAUSES = frozenset({"MEMBER_JOIN_REQUEST", "MEMBER_JOINED", "MEMBER_LEFT", "MEMBER_SESSION_EXPIRED",
                     "PENDING_MEMBER_EXPIRED", "K848_MEMBER_LEFT", "K848_MEMBER_FENCED", "FAULT_INJECTED"})


class SequenceBuilder:
    """Rows in, one :class:`GroupSequence` per group out (``sequences``), updated row by row."""

    def __init__(self) -> None:
        self.sequences: dict[str, GroupSequence] = {}
        self._states: dict[str, GroupState] = {}

    def add(self, row: Mapping[str, Any]) -> None:
        group_id, event = row.get("group_id"), row.get("event_type")
        if not isinstance(group_id, str) or not isinstance(event, str):
            return  # topic metadata, transactions, cluster-wide faults
        state = self._state(group_id, str(row.get("group_kind") or CLASSIC))
        if event in _STARTS:
            self._start(state, row)
        steps = steps_of(state, row)
        cause = _is_cause(row)
        if state.tail or cause:
            state.tail.append((row, steps))
        else:
            self._place(state, steps)
        if event in _SETTLES and not cause:
            self._flush_tail(state)

    def _state(self, group_id: str, kind: str) -> GroupState:
        state = self._states.get(group_id)
        if state is None:
            sequence = GroupSequence(group_id, kind)
            sequence.generations.append(Generation(0))
            self.sequences[group_id] = sequence
            state = self._states[group_id] = GroupState(sequence)
            state.current = sequence.generations[0]
        elif kind != state.sequence.kind and kind == CONSUMER:
            state.sequence.kind = CONSUMER  # an online upgrade: the same group id carries on
        return state

    def _start(self, state: GroupState, row: Mapping[str, Any]) -> None:
        """A new generation: it takes the rows that caused it from the previous one's tail."""
        number = int(row.get("generation") or 0)
        generation = Generation(number)
        state.sequence.generations.append(generation)
        state.current = generation
        state.before_rebalance = set(state.members)
        state.rejoined, state.notified = set(), set()
        tail, state.tail = state.tail, []
        for _, steps in tail:
            self._place(state, steps)

    def _flush_tail(self, state: GroupState) -> None:
        tail, state.tail = state.tail, []
        for _, steps in tail:
            self._place(state, steps)

    def _place(self, state: GroupState, steps: list[Step]) -> None:
        generation = state.current
        generation.lane(COORDINATOR, COORDINATOR)
        for step in steps:
            keys = step.over if isinstance(step, Note) else (step.sender, step.receiver)
            for key in keys:
                generation.lane(key, COORDINATOR if key == COORDINATOR else state.label(key))
            generation.steps.append(step)

    def forget(self, group_id: str) -> None:
        """Drop a group's sequence and what its rows told (a live view keeping a bounded number of groups)."""
        self.sequences.pop(group_id, None)
        self._states.pop(group_id, None)

    def finish(self) -> dict[str, GroupSequence]:
        """Every group's sequence with rows still awaiting a next generation kept in the last one."""
        for state in self._states.values():
            self._flush_tail(state)
            state.sequence.generations = [g for g in state.sequence.generations if g.steps]
        return self.sequences


def _is_cause(row: Mapping[str, Any]) -> bool:
    """Rows that usually start the next rebalance: written into the open generation only once it begins."""
    if row.get("reason_code") == "group_created":
        return True  # the group's creation belongs to its first generation
    return str(row.get("event_type")) in _CAUSES


def build(rows: Iterable[Mapping[str, Any]]) -> dict[str, GroupSequence]:
    """Every group's sequence from recording rows (in ``seq`` order)."""
    builder = SequenceBuilder()
    for row in rows:
        builder.add(row)
    return builder.finish()
