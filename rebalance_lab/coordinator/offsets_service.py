"""The edge object for offsets: the store, the group gate, retention on the world's timer."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.offsets_gate import subscription_topics
from rebalance_lab.coordinator.classic.records import GroupDeleted, GroupRecord
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.group_service import SERVICE_KEY as GROUPS_KEY
from rebalance_lab.coordinator.group_service import GroupService
from rebalance_lab.coordinator.offsets import CommitTimeExpiry, OffsetStore, PendingTxnOffsets
from rebalance_lab.coordinator.world import World

SERVICE_KEY = "offsets"


class OffsetService:
    def __init__(self, world: World, groups: GroupService) -> None:
        self.world = world
        self.groups = groups
        self.store = OffsetStore(world.config.group)
        self.pending = PendingTxnOffsets()  # TxnOffsetCommit's offsets until their transaction ends
        self.store.start_sweeps(world.now_ms())
        groups.subscribe(self._on_group_record)
        world.cluster.on_change(self._on_topic_change)

    def next_deadline(self) -> int | None:
        return self.store.next_deadline()

    def fire_timers(self, now_ms: int) -> None:
        if not self.store.sweep_due(now_ms):
            return
        self.store.expire(now_ms, self._expiry_of, _subscribed_topics)
        # SHARD.cleanupGroupMetadata: any Empty group left without offsets is deleted, including
        # groups that only ever answered MEMBER_ID_REQUIRED, and KIP-848 consumer groups
        # (Group.shouldExpire is true for both kinds in 4.4.0).
        for view in self.groups.coordinator.groups():
            if view.state == "Empty" and not self.store.has_offsets(view.group_id):
                self.groups.delete_empty_group(view.group_id)
        if not self.groups.consumer_started:  # no KIP-848 group yet (the coordinator is made on first use)
            return
        consumer = self.groups.consumer
        for group_id, state, _type in consumer.list_entries():
            if state == "Empty" and not self.store.has_offsets(group_id):
                _error, fx = consumer.delete_group(now_ms, group_id)
                self.groups.apply(fx)

    def _expiry_of(self, group_id: str) -> GroupView | CommitTimeExpiry | None:
        """A consumer group's offsets expire by commit time, but not those of topics it subscribes to."""
        consumer = self.groups.consumer if self.groups.consumer_started else None
        if consumer is None or not consumer.has_group(group_id):
            return self.groups.coordinator.group(group_id)
        topics = {topic for (topic, _partition), _value in self.store.fetch_all(group_id)}
        return CommitTimeExpiry(frozenset(t for t in topics if consumer.is_subscribed_to(group_id, t)))

    def _on_group_record(self, record: GroupRecord) -> None:
        # DeleteGroups (and an Empty group's expiry) removes the group's offsets with it.
        if isinstance(record, GroupDeleted) or (self.groups.consumer_started and _consumer_group_deleted(record)):
            self.store.delete_group(record.group_id)

    def _on_topic_change(self, topic: str, info: object | None) -> None:
        if info is None:
            self.store.delete_topic(topic)


def _consumer_group_deleted(record: GroupRecord) -> bool:
    # imported here: serve starts without the KIP-848 package, made on first use (group_service, issue 22)
    from rebalance_lab.coordinator.consumer.records import GroupDeleted as ConsumerGroupDeleted

    return isinstance(record, ConsumerGroupDeleted)


def _subscribed_topics(group: GroupView) -> frozenset[str] | None:
    """The union of the members' subscribed topics for the selected protocol (None if unknown)."""
    topics: set[str] = set()
    for member in group.members:
        metadata = next((p.metadata for p in member.protocols if p.name == group.protocol_name), None)
        parsed = None if metadata is None else subscription_topics(metadata)
        if parsed is None:
            return None
        topics.update(parsed)
    return frozenset(topics)


def install(world: World) -> OffsetService:
    groups = world.services[GROUPS_KEY]
    service = OffsetService(world, groups)
    world.services[SERVICE_KEY] = service
    world.register_timed(service)
    return service


def offsets_of(world: World) -> OffsetService:
    service: OffsetService = world.services[SERVICE_KEY]
    return service
