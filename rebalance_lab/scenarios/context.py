"""What a run remembers between steps: member ids, generations, leaders, group ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.scenarios.model import MemberSpec, Scenario, ScenarioError
from rebalance_lab.scenarios.normalise import Identities

_ABSENT = object()
Owned = list[tuple[uuid.UUID, list[int]]]


@dataclass
class ConsumerState:
    """What KIP-848 members learnt from their last successful ConsumerGroupHeartbeat answers."""

    ids: dict[str, str] = field(default_factory=dict)  # alias -> member id
    epochs: dict[str, int] = field(default_factory=dict)  # alias -> member epoch
    assigned: dict[str, Owned] = field(default_factory=dict)  # alias -> last Assignment received


@dataclass
class RunContext:
    scenario: Scenario
    identities: Identities = field(default_factory=Identities)
    generations: dict[str, int] = field(default_factory=dict)  # alias -> generation of its last join
    protocol_names: dict[str, str | None] = field(default_factory=dict)  # alias -> from its last join
    leaders: dict[str, str] = field(default_factory=dict)  # actual group id -> leader member id
    groups: dict[str, str] = field(default_factory=dict)  # scenario group name -> actual id
    topics: dict[str, str] = field(default_factory=dict)  # scenario topic name -> actual name
    suffix: str = ""
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # scenario topic name -> id (from Metadata)
    consumers: ConsumerState = field(default_factory=lambda: ConsumerState())

    def __post_init__(self) -> None:
        # Real brokers keep groups and topics between runs (and a topic's partition count),
        # so each run uses its own names; transcripts show the scenario's names.
        self.suffix = "-" + uuid.uuid4().hex[:8] if self.scenario.unique_names else ""
        names = {self.scenario.group, *(m.group for m in self.scenario.members.values())}
        self.groups = {name: name + self.suffix for name in sorted(names)}
        for name in self.scenario.topics:
            self.topic(name)

    # -- lookups -----------------------------------------------------------------------

    def member(self, alias: str) -> MemberSpec:
        return self.scenario.members[alias]

    def group_id(self, name: str | None) -> str:
        """A scenario group name -> the id sent; a name the scenario never declared is sent as is."""
        name = self.scenario.group if name is None else name
        return self.groups.get(name, name)

    def member_group(self, alias: str, options: dict[str, Any]) -> str:
        return self.group_id(options.get("group", self.member(alias).group))

    def topic(self, name: str) -> str:
        """The topic name sent for a scenario topic name (registered for the transcript)."""
        return self.topics.setdefault(name, name + self.suffix)

    @property
    def actual_to_name(self) -> dict[str, str]:
        return {actual: name for name, actual in self.groups.items()}

    def member_id(self, alias: str, options: dict[str, Any]) -> str:
        """The member's current id, or ``member_id`` from the step: ``@b`` is b's current
        id, anything else is sent literally (``""`` forces a new member)."""
        value = options.get("member_id", _ABSENT)
        if value is _ABSENT:
            return self.identities.current.get(alias, "")
        return self.resolve_id(value)

    def resolve_id(self, value: Any) -> str:
        text = "" if value is None else str(value)
        if text.startswith("@"):
            other = text[1:]
            if other not in self.scenario.members:
                raise ScenarioError(f"member_id {text!r} names an unknown member")
            return self.identities.current.get(other, "")
        self.identities.literal(text)
        return text

    def instance_id(self, alias: str, options: dict[str, Any]) -> str | None:
        value = options.get("instance_id", _ABSENT)
        if value is _ABSENT:
            return self.member(alias).group_instance_id
        return None if value is None else str(value)

    def generation(self, alias: str, options: dict[str, Any]) -> int:
        """``generation``: an int, or ``"+1"``/``"-1"`` relative to the member's current one."""
        current = self.generations.get(alias, -1)
        value = options.get("generation")
        if value is None:
            return current
        if isinstance(value, str) and value[:1] in "+-":
            return current + int(value)
        return int(value)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The scenario name of a topic id seen in Metadata (deleted topics keep theirs)."""
        for name, known in self.topic_ids.items():
            if known == topic_id:
                return name
        return None

    # -- learning from JoinGroup responses --------------------------------------------------

    def learn_join(self, alias: str, group_id: str, response: Any) -> None:
        if response.error_code not in (0, 79):  # NONE, MEMBER_ID_REQUIRED carry the member's id
            return
        self.identities.learn(alias, response.member_id)
        if response.error_code == 0:
            self.generations[alias] = response.generation_id
            self.protocol_names[alias] = response.protocol_name
            self.leaders[group_id] = response.leader

    def is_leader(self, alias: str, group_id: str) -> bool:
        current = self.identities.current.get(alias)
        return current is not None and self.leaders.get(group_id) == current
