"""Seeded KIP-848 group histories for the server-side assignor differential test.

A *scenario* is a consumer group followed over 2-4 target computations. Each round is one
``server_assign`` case (format in tests/java/.../ServerAssign.java): the members in the order
``TargetAssignmentBuilder`` puts them into its map, each with its subscription (topic names in
request order) and its current target in record order. Between rounds members join, leave, change
subscriptions and restart under their instance id; topics grow, appear and disappear; the assignor
may switch. The next round's targets are Java's answer, kept only for members whose partitions
changed, as the coordinator writes records only for those (``TargetAssignmentBuilder.build``).
"""

from __future__ import annotations

import base64
import copy
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.coordinator.consumer.assignors import (
    AssignorError,
    MemberSubscription,
    PartitionSet,
    SubscriptionType,
    TopicMetadata,
    assign,
)
from rebalance_lab.coordinator.consumer.assignors.java_order import (
    TimelineKeyOrder,
    overlay_order,
    subscription_name_order,
    uuid_string,
)

Case = dict[str, Any]
Record = list[list[Any]]  # [[topic id, [partitions]], ...] in record order

_TOPIC_STYLES = ["t{}", "topic-{}", "orders.{}", "x{}y", "T_{}", "events_{}"]
_RACKS = ["a", "b", "c", "rack-1", "us-east-1a"]


def kafka_uuid(rng: random.Random) -> str:
    return uuid_string(uuid.UUID(int=rng.getrandbits(128)))


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    rack: str | None
    topics: list[str]
    unknown_topic_ids: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    """A group between two target computations (Java's side of the history)."""

    rng: random.Random
    assignor: str
    topics: dict[str, Case]  # name -> {"id", "name", "partitions", "racks"?}
    members: dict[str, Member]
    order: TimelineKeyOrder
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    targets: dict[str, Record] = field(default_factory=dict)
    serial: int = 0

    def case(self) -> Case:
        """The next ``server_assign`` case: members in ``memberSpecs`` put order."""
        order = overlay_order(self.order, self.left, self.joined)
        members = []
        for member_id in order:
            m = self.members[member_id]
            entry: Case = {
                "id": member_id,
                "instance_id": m.instance_id,
                "rack": m.rack,
                "topics": list(m.topics),
                "assignment": self.targets.get(member_id, []),
            }
            if m.unknown_topic_ids:
                entry["unknown_topic_ids"] = list(m.unknown_topic_ids)
            members.append(entry)
        return copy.deepcopy({  # later rounds change topics and targets in place
            "kind": "server_assign",
            "assignor": self.assignor,
            "subscription_type": subscription_type(list(self.members.values())).value,
            "topics": list(self.topics.values()),
            "members": members,
        })

    def settle(self, case: Case, result: Any) -> None:
        """Store Java's answer as the coordinator would, and fold the round's joins and leaves."""
        for member_id in self.left:
            self.order.remove(member_id)
        for member_id in self.joined:
            self.order.put(member_id)
        self.left, self.joined = [], []
        if isinstance(result, dict):
            for member in case["members"]:
                new = result.get(member["id"], [])
                if _as_sets(new) != _as_sets(member["assignment"]):
                    self.targets[member["id"]] = new


def subscription_type(members: list[Member]) -> SubscriptionType:
    """``ModernGroup.subscriptionType``: homogeneous iff every name is subscribed by every member."""
    names = {frozenset(m.topics) for m in members}
    if all(not m.topics for m in members) or len(names) == 1:
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def _as_sets(record: Record) -> dict[str, frozenset[int]]:
    return {topic: frozenset(parts) for topic, parts in record if parts}


def normalised(result: Any) -> Any:
    """Member -> topic -> sorted partitions, members without partitions dropped (absent = empty)."""
    if not isinstance(result, dict):
        return result
    out = {m: {t: sorted(p) for t, p in record} for m, record in result.items()}
    return {m: topics for m, topics in out.items() if any(topics.values())}


# --------------------------------------------------------------------------- generation


def new_scenario(rng: random.Random, assignor: str) -> Scenario:
    topics: dict[str, Case] = {}
    style = rng.choice(_TOPIC_STYLES)
    racked = rng.random() < 0.4
    for i in range(rng.randint(1, 10)):
        _add_topic(rng, topics, style.format(i), racked)
    scenario = Scenario(rng, assignor, topics, {}, TimelineKeyOrder())
    homogeneous = rng.random() < 0.5
    shared = _random_subscription(rng, topics)
    for _ in range(_member_count(rng)):
        _join(scenario, shared if homogeneous else None)
    return scenario


def _member_count(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.5:
        return rng.randint(1, 6)
    if roll < 0.85:
        return rng.randint(7, 20)
    return rng.randint(21, 40)


def _add_topic(rng: random.Random, topics: dict[str, Case], name: str, racked: bool) -> None:
    count = rng.choice([rng.randint(1, 8), rng.randint(1, 64), rng.randint(0, 3)])
    topic: Case = {"id": kafka_uuid(rng), "name": name, "partitions": count}
    if racked:
        topic["racks"] = [rng.sample(_RACKS, rng.randint(1, 3)) for _ in range(count)]
    topics[name] = topic


def _random_subscription(rng: random.Random, topics: dict[str, Case]) -> list[str]:
    names = list(topics)
    roll = rng.random()
    if roll < 0.05:
        chosen: list[str] = []
    elif roll < 0.5:
        chosen = rng.sample(names, rng.randint(1, len(names)))
    else:
        chosen = list(names)
    if rng.random() < 0.1:
        chosen.append(f"missing-{rng.randrange(3)}")  # a name the image lacks: TopicIds drops it
    rng.shuffle(chosen)
    return chosen


def _new_member_id(scenario: Scenario) -> str:
    scenario.serial += 1
    rng = scenario.rng
    style = rng.randrange(3)
    if style == 0:
        return kafka_uuid(rng)  # KIP-1082: client-generated Uuid strings
    if style == 1:
        return f"member-{scenario.serial}"
    return f"consumer-{scenario.serial}-{rng.getrandbits(32):08x}"


def _join(scenario: Scenario, shared: list[str] | None, instance_id: str | None = None) -> str:
    rng = scenario.rng
    member_id = _new_member_id(scenario)
    if instance_id is None and rng.random() < 0.25:
        instance_id = f"instance-{scenario.serial}"
    topics = list(shared) if shared is not None else _random_subscription(rng, scenario.topics)
    if shared is not None and rng.random() < 0.5:
        rng.shuffle(topics)  # same set, another request order
    rack = rng.choice(_RACKS) if rng.random() < 0.3 else None
    scenario.members[member_id] = Member(member_id, instance_id, rack, topics)
    scenario.joined.append(member_id)
    return member_id


def evolve(scenario: Scenario) -> None:
    """Between two rounds: a few membership, subscription and metadata changes."""
    rng = scenario.rng
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.25:
            _join(scenario, _shared_subscription(scenario))
        elif roll < 0.45 and len(scenario.members) > 1:
            _leave(scenario, rng.choice(list(scenario.members)))
        elif roll < 0.55:
            _replace_static(scenario)
        elif roll < 0.7 and scenario.members:
            member = scenario.members[rng.choice(list(scenario.members))]
            member.topics = _random_subscription(rng, scenario.topics)
        elif roll < 0.85:
            topic = scenario.topics[rng.choice(list(scenario.topics))]
            _grow(rng, topic)
        elif roll < 0.93:
            _add_topic(rng, scenario.topics, f"new-{scenario.serial}-{rng.randrange(100)}", rng.random() < 0.3)
            scenario.serial += 1
        elif len(scenario.topics) > 1:
            del scenario.topics[rng.choice(list(scenario.topics))]  # members keep the name; TopicIds drops it
    if rng.random() < 0.1:
        scenario.assignor = rng.choice(["uniform", "range"])


def _shared_subscription(scenario: Scenario) -> list[str] | None:
    subscriptions = {frozenset(m.topics) for m in scenario.members.values()}
    if len(subscriptions) == 1 and scenario.rng.random() < 0.7:
        return list(next(iter(scenario.members.values())).topics)
    return None


def _leave(scenario: Scenario, member_id: str) -> None:
    del scenario.members[member_id]
    scenario.targets.pop(member_id, None)
    if member_id in scenario.joined:
        scenario.joined.remove(member_id)
    else:
        scenario.left.append(member_id)


def _replace_static(scenario: Scenario) -> None:
    """A static member restarts: a new member id takes over the instance id and its target."""
    statics = [m for m in scenario.members.values() if m.instance_id is not None]
    if not statics:
        return
    old = scenario.rng.choice(statics)
    target = scenario.targets.get(old.member_id)
    _leave(scenario, old.member_id)
    new_id = _join(scenario, list(old.topics), old.instance_id)
    if target is not None:
        scenario.targets[new_id] = target


def _grow(rng: random.Random, topic: Case) -> None:
    extra = rng.randint(1, 8)
    topic["partitions"] += extra
    if "racks" in topic:
        topic["racks"] += [rng.sample(_RACKS, rng.randint(1, 3)) for _ in range(extra)]


def with_unknown_topic(rng: random.Random, case: Case) -> Case:
    """One member also subscribed to an id the image lacks: both sides must fail alike."""
    member = rng.choice(case["members"])
    member["unknown_topic_ids"] = [kafka_uuid(rng)]
    return case


# --------------------------------------------------------------------------- the Python side


def run_python(case: Case) -> dict[str, Record]:
    """Our ``assign`` on a case, answered in the oracle's format (record order)."""
    topics = {}
    for topic in case["topics"]:
        topic_id = parse_kafka_uuid(topic["id"])
        racks = {p: frozenset(r) for p, r in enumerate(topic.get("racks", []))}
        topics[topic_id] = TopicMetadata(topic_id, topic["name"], topic["partitions"], racks)
    by_name = {t.name: t.topic_id for t in topics.values()}
    members = []
    for m in case["members"]:
        ids = {by_name[n] for n in m["topics"] if n in by_name}
        ids.update(parse_kafka_uuid(u) for u in m.get("unknown_topic_ids", []))
        assignment = {parse_kafka_uuid(t): PartitionSet(parts) for t, parts in m["assignment"]}
        members.append(
            MemberSubscription(
                m["id"], m["instance_id"], m["rack"], frozenset(ids), assignment, subscription_name_order(m["topics"])
            )
        )
    result = assign(case["assignor"], members, SubscriptionType(case["subscription_type"]), topics)
    return {
        member_id: [[uuid_string(t), list(_order(parts))] for t, parts in record.items()]
        for member_id, record in result.items()
    }


def _order(parts: frozenset[int]) -> tuple[int, ...]:
    return parts.order if isinstance(parts, PartitionSet) else tuple(sorted(parts))


__all__ = ["AssignorError", "evolve", "new_scenario", "normalised", "run_python", "with_unknown_topic"]
