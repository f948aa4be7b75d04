"""A test context for the KIP-848 core: a manual clock, a topics image, and scenario helpers.

Ids like ``A``/``B`` keep Java's map orders easy to reason about (spec/kip848.md §10). Times
are in ms on a manual clock that starts at 0; timers fire only in :meth:`Ctx.advance`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.coordinator.consumer.topics import TopicImage, TopicsImage
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView, ConsumerMemberView
from rebalance_lab.coordinator.records import GroupRecord

FOO = TopicImage(uuid.UUID("00000000-0000-0000-0000-00000000f001"), "foo", 6)
BAR = TopicImage(uuid.UUID("00000000-0000-0000-0000-00000000ba02"), "bar", 3)
REBALANCE_TIMEOUT = 300_000


def seeded_uuids() -> Callable[[], uuid.UUID]:
    """The coordinator's UUID source, seeded: generated member ids are the same on every run."""
    rng = random.Random(848)
    return lambda: uuid.UUID(int=rng.getrandbits(128))


class Ctx:
    def __init__(self, config: ConsumerGroupConfig | None = None, topics: Iterable[TopicImage] = (FOO, BAR),
                 classic: Mapping[str, str] | None = None) -> None:
        self.classic = dict(classic or {})
        self.coordinator = ConsumerGroupCoordinator(config or ConsumerGroupConfig(), seeded_uuids(), self.classic.get)
        self.topics = TopicsImage.of(topics)
        self.now = 0
        self.records: list[GroupRecord] = []  # everything so far
        self.last: list[GroupRecord] = []  # the last operation's

    # -- requests --------------------------------------------------------------------------------------------------

    def hb(self, member_id: str, epoch: int, group: str = "g", **fields: Any) -> HeartbeatResult:
        inp = ConsumerGroupHeartbeatInput(group_id=group, member_id=member_id, member_epoch=epoch, **fields)
        fx = self.coordinator.heartbeat(self.now, inp, self.topics, "t")
        self._took(fx.records)
        result = fx.reply_to("t")
        assert isinstance(result, HeartbeatResult)
        return result

    def join(self, member_id: str, topics: Iterable[str] | None = ("foo",), group: str = "g",
             **fields: Any) -> HeartbeatResult:
        fields.setdefault("rebalance_timeout_ms", REBALANCE_TIMEOUT)
        fields.setdefault("topic_partitions", ())
        names = None if topics is None else tuple(topics)
        return self.hb(member_id, 0, group, subscribed_topic_names=names, **fields)

    def ack(self, member_id: str, epoch: int, owned: Mapping[str, Iterable[int]], group: str = "g",
            **fields: Any) -> HeartbeatResult:
        """A heartbeat reporting what the member owns (``TopicPartitions``), by topic name."""
        return self.hb(member_id, epoch, group, topic_partitions=self.owned(owned), **fields)

    def leave(self, member_id: str, epoch: int = -1, group: str = "g", **fields: Any) -> HeartbeatResult:
        return self.hb(member_id, epoch, group, **fields)

    def hand_over(self, **join_fields: Any) -> None:
        """The §10 #1-#4 story (4.4.0 numbers: a new group starts at epoch 1): A joins (epoch 2, all of foo), a
        second later B joins (epoch 3), A reports all of foo and then its release of foo[3-5]; B has not heartbeated
        since, so it still owns nothing."""
        self.join("A", **join_fields)
        self.advance(1_000)
        self.join("B", **join_fields)
        self.ack("A", 2, foo(0, 1, 2, 3, 4, 5))
        self.ack("A", 2, foo(0, 1, 2))

    def stable_pair(self) -> None:
        """:meth:`hand_over`, then B's heartbeat takes foo[3-5]: A and B both stable at epoch 3."""
        self.hand_over()
        self.hb("B", 3)

    def owned(self, owned: Mapping[str, Iterable[int]]) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
        ids = {t.name: t.topic_id for t in self.topics.by_name.values()}
        return tuple((ids[name], tuple(ps)) for name, ps in owned.items())

    # -- time and topics -------------------------------------------------------------------------------------------

    def advance(self, ms: int) -> list[GroupRecord]:
        self.now += ms
        fx = self.coordinator.fire_timers(self.now, self.topics)
        self._took(fx.records)
        return fx.records

    def set_topics(self, *topics: TopicImage, changed: Iterable[str] = ()) -> None:
        created = any(t.name not in self.topics.by_name for t in topics)
        version = self.topics.version + 1
        self.topics = TopicsImage.of(topics, version, version if created else self.topics.new_topics_version)
        self.coordinator.on_topics_changed(set(changed) | {t.name for t in topics})

    def _took(self, records: list[GroupRecord]) -> None:
        self.last = list(records)
        self.records.extend(records)

    # -- reading ---------------------------------------------------------------------------------------------------

    def view(self, group: str = "g") -> ConsumerGroupView:
        found = self.coordinator.group(group)
        assert found is not None
        return found

    def member(self, member_id: str, group: str = "g") -> ConsumerMemberView:
        found = self.view(group).member(member_id)
        assert found is not None
        return found

    def names(self, assignment: Mapping[uuid.UUID, Iterable[int]] | None) -> dict[str, set[int]] | None:
        """An assignment by topic name (None stays None: "no change" in a response)."""
        if assignment is None:
            return None
        return {self.topics.name_of(t) or str(t): set(ps) for t, ps in assignment.items()}


def foo(*partitions: int) -> dict[str, set[int]]:
    return {"foo": set(partitions)}


def grown(topic: TopicImage, partitions: int) -> TopicImage:
    return replace(topic, num_partitions=partitions)


def kinds(records: Iterable[GroupRecord]) -> list[str]:
    return [type(r).__name__ for r in records]


def check_group_invariants(group: ConsumerGroup | None) -> None:
    """What holds after every step, whatever the members do: no partition is assigned to or being revoked from
    two members at once, and member epoch <= assignment epoch <= group epoch (spec/kip848.md §4)."""
    if group is None:
        return
    holders: dict[tuple[uuid.UUID, int], str] = {}
    for member in group.members.values():
        for source in (member.assigned, member.pending_revocation):
            for topic_id, partitions in source.items():
                for p in partitions:
                    assert holders.setdefault((topic_id, p), member.member_id) == member.member_id, (topic_id, p)
        assert member.member_epoch <= group.assignment_epoch
    assert group.assignment_epoch <= group.group_epoch
