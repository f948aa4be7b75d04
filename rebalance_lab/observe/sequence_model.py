"""The sequence-diagram model's values: lanes, steps (messages and notes), generations, a group's sequence.

Built by :mod:`.sequence` from recording rows; drawn by :mod:`.diagram` and the live page. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

COORDINATOR = "coordinator"
CLASSIC, CONSUMER = "classic", "consumer"
UUID_TAIL = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Lane:
    key: str  # the member id, or COORDINATOR
    label: str  # what a diagram prints: client or instance id with the member id's first 8 hex digits


@dataclass(frozen=True)
class Message:
    seq: int
    ts: str
    sender: str  # lane keys
    receiver: str
    api: str  # JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat
    text: str
    reply: bool = False  # an answer (drawn dashed)
    inferred: bool = False  # not a row of its own in the recording (see the module docstring)


@dataclass(frozen=True)
class Note:
    seq: int
    ts: str
    over: tuple[str, ...]  # lane keys
    text: str


Step = Message | Note


@dataclass
class Generation:
    number: int
    lanes: list[Lane] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    protocol: str | None = None
    leader: str | None = None  # a member id (classic)

    def lane(self, key: str, label: str) -> None:
        if all(existing.key != key for existing in self.lanes):
            self.lanes.append(Lane(key, label))

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.number, "protocol": self.protocol, "leader": self.leader,
            "lanes": [{"key": lane.key, "label": lane.label} for lane in self.lanes],
            "steps": [_step_dict(step) for step in self.steps],
        }


@dataclass
class GroupSequence:
    group_id: str
    kind: str  # CLASSIC or CONSUMER
    generations: list[Generation] = field(default_factory=list)

    def generation(self, number: int) -> Generation | None:
        return next((g for g in self.generations if g.number == number), None)

    def last(self) -> Generation | None:
        return self.generations[-1] if self.generations else None

    def to_dict(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "kind": self.kind,
                "generations": [g.to_dict() for g in self.generations if g.steps]}


def _step_dict(step: Step) -> dict[str, Any]:
    if isinstance(step, Note):
        return {"type": "note", "seq": step.seq, "ts": step.ts, "over": list(step.over), "text": step.text}
    return {"type": "message", "seq": step.seq, "ts": step.ts, "from": step.sender, "to": step.receiver,
            "api": step.api, "text": step.text, "reply": step.reply, "inferred": step.inferred}


def short(member_id: str | None) -> str:
    """``<client id>-<uuid>`` as ``<client id>-<first 8 hex>``; other ids unchanged."""
    if not member_id:
        return "-"
    match = UUID_TAIL.search(member_id)
    return member_id[: match.start()] + "-" + match.group(1) if match else member_id
