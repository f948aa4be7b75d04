"""The edge object between the asyncio shell and the sans-I/O group coordinators.

It owns one classic :class:`GroupCoordinator` and one KIP-848
:class:`~rebalance_lab.coordinator.consumer.coordinator.ConsumerGroupCoordinator`
(``service.consumer``, fed the cluster's topics as a :class:`TopicsImage`; made, and its package imported, on
first use: until then there is no consumer group and every group request is the classic coordinator's, and
``serve`` starts without the KIP-848 code, issue 22), gives every
request a token, keeps the token's :class:`Parked` reply and the function that turns the core's result into that API
version's response, applies :class:`Effects` (resolving parked replies, including
those of other members, and passing records to subscribers), and is the world's
:class:`~rebalance_lab.coordinator.world.Timed` component for group timers.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import uuid
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

from rebalance_lab.coordinator import join_race
from rebalance_lab.coordinator.classic.coordinator import GroupCoordinator
from rebalance_lab.coordinator.classic.messages import HeartbeatInput, JoinGroupInput, LeaveGroupInput, SyncGroupInput
from rebalance_lab.coordinator.classic.offsets_gate import OffsetDeleteCheck
from rebalance_lab.coordinator.classic.records import GroupRecord, RebalancePrepared
from rebalance_lab.coordinator.cluster import TopicInfo
from rebalance_lab.coordinator.collector_pause import CollectorPause, for_process
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.handlers.base import Parked
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from rebalance_lab.coordinator.classic.admin_messages import Result  # describe's results made on first use
    from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
    from rebalance_lab.coordinator.consumer.group_routing import GroupRouting
    from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput
    from rebalance_lab.coordinator.consumer.topics import TopicsImage

log = logging.getLogger("rebalance_lab.groups")

SERVICE_KEY = "groups"
ResponseBuilder = Callable[[Any], Any]  # the core's result -> a wire response body
Operation = Callable[[int, Any, int], Effects]  # (now_ms, input, token) -> Effects
RecordSubscriber = Callable[[GroupRecord], None]


class GroupRoutes(Protocol):
    """Who answers a classic group request: the classic coordinator alone, or GroupRouting once KIP-848 exists."""

    def join_group(self, now_ms: int, inp: JoinGroupInput, token: Hashable) -> Effects: ...

    def sync_group(self, now_ms: int, inp: SyncGroupInput, token: Hashable) -> Effects: ...

    def heartbeat(self, now_ms: int, inp: HeartbeatInput, token: Hashable) -> Effects: ...

    def leave_group(self, now_ms: int, inp: LeaveGroupInput, token: Hashable) -> Effects: ...


def uuid_source(seed: int | None) -> Callable[[], str]:
    """Random v4 UUIDs; reproducible uuid4-shaped ids when the emulator has a seed."""
    if seed is None:
        return lambda: str(uuid.uuid4())
    rng = random.Random(f"rebalance-lab-member-ids-{seed}")
    return lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


class GroupService:
    def __init__(self, world: World) -> None:
        config = world.config
        self._world = world
        # The delay-0 join race (join_race.py): "sampled" needs wall time, a manual clock runs "separate".
        race = join_race.effective_mode(config.group.join_race, world.clock.manual)
        self._latency = join_race.ExpirationLatency.seeded(config.seed) if race == join_race.SAMPLED else None
        if self._latency is not None:
            world.timer_latency_s = self._latency.sample_s
        group_config = dataclasses.replace(config.group, join_race=race)
        self.coordinator = GroupCoordinator(group_config, config.flavor, new_uuid=uuid_source(config.seed))
        self._classic_deadline = self.coordinator.next_deadline
        self._classic_bound = self.coordinator.deadline_bound  # bound once: asked after every request
        self._consumer_ids = uuid_source(None if config.seed is None else config.seed + 1)
        self._consumer: ConsumerGroupCoordinator | None = None
        self._routing: GroupRouting | None = None
        self._pending: dict[int, tuple[Parked, ResponseBuilder]] = {}
        # serve's own process: no cyclic collections while a big rebalance parks its requests (collector_pause.py)
        self.collector_pause: CollectorPause | None = for_process()
        self._rebalancing = self.coordinator.rebalancing  # whether a held group still rebalances (the pause asks)
        self._tokens = itertools.count(1)
        self._subscribers: list[RecordSubscriber] = []
        self._topics: TopicsImage | None = None
        self._previous_topics: TopicsImage | None = None  # the image before the changes in _changed_topics
        self._changed_topics: set[str] = set()
        self._topics_version = 0
        self._new_topics_version = 0
        world.cluster.on_change(self._on_topic_change)

    def subscribe(self, callback: RecordSubscriber) -> None:
        """Every record the coordinator emits, in order (the recorder and the narrator use this)."""
        self._subscribers.append(callback)

    def call(self, operation: Operation, inp: Any, build: ResponseBuilder) -> Parked:
        """Run one request through the core; the reply may be ready at once or come later."""
        token = next(self._tokens)
        now = self._world.now_ms()
        fx = operation(now, inp, token)
        replies = fx.replies
        pause = self.collector_pause
        if not fx.records and len(replies) == 1 and replies[0][0] == token:
            # The usual heartbeat: only this request's own answer, ready now. Nothing else could resolve its
            # token, so it needs no pending entry and no resolution (issue 22: per-heartbeat CPU).
            parked = Parked(build(replies[0][1]), True)
            if pause is not None and pause.held:  # a follower's SyncGroup after the leader's may end the hold
                pause.parked(len(self._pending), now, getattr(inp, "group_id", None), self._rebalancing)
        else:
            parked = Parked()
            self._pending[token] = (parked, build)
            if replies or fx.records:
                self._apply(fx)
            if pause is not None:
                pause.parked(len(self._pending), now, getattr(inp, "group_id", None), self._rebalancing)
        # Classic timers already due (a zero initial delay) fire now rather than on the shell's next timer turn,
        # so a manual clock needs no advance(0) for them; none is due after the usual request (nothing is run).
        # join_race "sampled": a classic timer this request made due expires on the shell's timer turn instead,
        # after the modelled expiration latency, as a broker queues it behind the requests it has already
        # received (unless the draw says it overtook them).
        deadline = self._classic_bound()  # at most the earliest: past it, the exact one decides
        if deadline is not None and deadline <= now and (deadline := self._classic_deadline()) is not None \
                and deadline <= now and (self._latency is None or self._latency.overtakes()):
            self.apply(self.coordinator.fire_timers(now))
        if self._consumer is not None:
            self.apply(self._consumer.fire_timers(now, self.topics()))
        return parked

    @property
    def pending_replies(self) -> int:
        """How many requests wait for a reply from another request or a timer (a parked JoinGroup or SyncGroup)."""
        return len(self._pending)

    def apply(self, fx: Effects) -> None:
        """Resolve ``fx``'s replies and pass on its records (a timer's, an operator's, an offsets request's)."""
        self._apply(fx)
        pause = self.collector_pause
        if pause is not None and (pause.held or fx.replies):
            pause.parked(len(self._pending), self._world.now_ms(), None, self._rebalancing)

    def _apply(self, fx: Effects) -> None:
        for token, result in fx.replies:
            self._resolve(token, result)
        pause = self.collector_pause
        for record in fx.records:
            if pause is not None and type(record) is RebalancePrepared:  # a big group's hold begins with it
                pause.began(record.group_id, self._world.now_ms(), self._rebalancing)
            for subscriber in self._subscribers:
                try:
                    subscriber(record)
                except Exception:  # a broken subscriber must not break the group
                    log.exception("record subscriber failed on %s", type(record).__name__)

    def _resolve(self, token: Any, result: Result) -> None:
        entry = self._pending.pop(token, None)
        if entry is None:
            log.warning("reply for unknown token %r dropped", token)
            return
        parked, build = entry
        parked.resolve(build(result))

    # -- the KIP-848 consumer groups ----------------------------------------------------

    @property
    def consumer_started(self) -> bool:
        """Whether the KIP-848 coordinator exists (before, there is no consumer group and no consumer record)."""
        return self._consumer is not None

    @property
    def consumer(self) -> ConsumerGroupCoordinator:
        """The KIP-848 coordinator, made on first use (a ConsumerGroupHeartbeat, a describe, loading groups)."""
        return self._kip848()[0]

    def _kip848(self) -> tuple[ConsumerGroupCoordinator, GroupRouting]:
        if self._consumer is None or self._routing is None:
            from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
            from rebalance_lab.coordinator.consumer.group_routing import GroupRouting

            new_id = self._consumer_ids
            self._consumer = ConsumerGroupCoordinator(self._world.config.consumer_group, lambda: uuid.UUID(new_id()),
                                                      self._classic_group_kind, classic=self.coordinator)
            # a group request goes to the group of that id, whichever its type (spec/kip848.md §7)
            self._routing = GroupRouting(self.coordinator, self._consumer, self.topics)
        return self._consumer, self._routing

    @property
    def routing(self) -> GroupRoutes:
        """Before any KIP-848 coordinator exists no group is a consumer group: the classic one answers."""
        return self.coordinator if self._routing is None else self._routing

    def topics(self) -> TopicsImage:
        """The cluster's topics as the consumer coordinator sees them (rebuilt after a topic change)."""
        if self._topics is None:  # only the changed topics are built again (image_of)
            from rebalance_lab.coordinator.consumer.topics import image_of

            self._topics = image_of(self._world.cluster, self._topics_version, self._new_topics_version,
                                    self._previous_topics, self._changed_topics)
            self._previous_topics = self._topics
            self._changed_topics.clear()
        return self._topics

    def _on_topic_change(self, name: str, info: TopicInfo | None) -> None:
        known = self._topics is not None and self._topics.get(name) is not None
        self._topics_version += 1
        if info is not None and not known:
            self._new_topics_version = self._topics_version
        self._topics = None
        self._changed_topics.add(name)
        if self._consumer is not None:
            self._consumer.on_topics_changed({name})

    def _classic_group_kind(self, group_id: str) -> str | None:
        view = self.coordinator.group(group_id)
        if view is None:
            return None
        return "empty" if view.state == "Empty" else "non-empty"

    def consumer_heartbeat(self, now_ms: int, inp: ConsumerGroupHeartbeatInput, token: int) -> Effects:
        """A heartbeat; a classic group of the same id is converted first (Kafka's classic tombstone comes
        before the consumer group's records; its offsets stay; parked classic requests get REBALANCE_IN_PROGRESS)."""
        return self._kip848()[1].consumer_heartbeat(now_ms, inp, token)

    # -- Timed ---------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self._with_consumer(self._classic_deadline())

    def deadline_bound(self) -> int | None:
        """At most :meth:`next_deadline`, None only when it is None (the shell arms its timer at it, timers.py)."""
        return self._with_consumer(self._classic_bound())

    def _with_consumer(self, classic: int | None) -> int | None:
        if self._consumer is None:
            return classic
        consumer = self._consumer.next_deadline()
        if classic is None or consumer is None:
            return consumer if classic is None else classic
        return min(classic, consumer)

    def fire_timers(self, now_ms: int) -> None:
        self.apply(self.coordinator.fire_timers(now_ms))
        if self._consumer is not None:
            self.apply(self._consumer.fire_timers(now_ms, self.topics()))

    # -- the offsets work's entry points -------------------------------------------------

    def validate_offset_commit(self, group_id: str, member_id: str, generation_id: int,
                               group_instance_id: str | None, api_version: int,
                               transactional: bool = False) -> ErrorCode:
        """The group verdict for an OffsetCommit (spec §12.1) or TxnOffsetCommit; may create a simple group."""
        error, fx = self.coordinator.validate_offset_commit(self._world.now_ms(), group_id, member_id,
                                                            generation_id, group_instance_id, api_version,
                                                            transactional)
        self.apply(fx)
        return error

    def validate_offset_fetch(self, group_id: str) -> ErrorCode:
        return self.coordinator.validate_offset_fetch(group_id)

    def validate_offset_delete(self, group_id: str) -> OffsetDeleteCheck:
        return self.coordinator.validate_offset_delete(group_id)

    def delete_empty_group(self, group_id: str) -> None:
        self.apply(self.coordinator.delete_empty_group(self._world.now_ms(), group_id))

    # -- operator actions (fault injection, the control endpoint) ------------------------

    def force_rebalance(self, group_id: str, reason: str = "forced by the operator") -> None:
        now = self._world.now_ms()
        self.apply(self.coordinator.force_rebalance(now, group_id, reason))
        self.fire_timers(now)
        self._world.wake()

    def expire_member(self, group_id: str, member_id: str) -> None:
        now = self._world.now_ms()
        self.apply(self.coordinator.expire_member(now, group_id, member_id))
        self.fire_timers(now)
        self._world.wake()

    def publish(self, record: GroupRecord) -> None:
        """Pass a record that is not a group state change (a fault) to every subscriber."""
        self.apply(Effects(records=[record]))


def install(world: World) -> GroupService:
    """Create the service, store it as ``world.services["groups"]`` and register its timers."""
    service = GroupService(world)
    world.services[SERVICE_KEY] = service
    world.register_timed(service)
    return service


def service_of(world: World) -> GroupService:
    service = world.services.get(SERVICE_KEY)
    if not isinstance(service, GroupService):
        service = install(world)
    return service


def owns_group(world: World, broker_id: int, group_id: str) -> bool:
    """False when the group's coordinator is another broker (the request gets NOT_COORDINATOR)."""
    try:
        check_coordinator(world, broker_id, group_id)
    except KafkaError:
        return False
    return True
