"""The emulated cluster's metadata: brokers, topics, partitions and their replicas.

All brokers live in one process; each has its own loopback listener. Replica
placement goes through one seam, :func:`place_replicas`, so the exact Kafka
algorithms (``AdminUtils`` for the kafka-3 flavor, KRaft ``StripedReplicaPlacer``
for kafka-4; spec/assignors.md §9) plug in without touching callers.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rebalance_lab.clients import placement
from rebalance_lab.clients.java_random import JavaRandom, JavaRandomSource
from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator import topic_configs
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_TOPIC_LENGTH = 249


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass
class PartitionInfo:
    """One partition's replicas and its current leadership (``PartitionRegistration``).

    ``leader_id`` starts as the first replica (the preferred leader); ``-1`` when no
    in-sync replica is alive, as KRaft's controller records it.
    """

    partition: int
    replicas: list[int]
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    leader_id: int = -2  # -2: not yet set; becomes replicas[0]

    def __post_init__(self) -> None:
        if not self.isr:
            self.isr = list(self.replicas)
        if self.leader_id == -2:
            self.leader_id = self.replicas[0]

    @property
    def leader(self) -> int:
        return self.leader_id


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionInfo] = field(default_factory=list)
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


def placement_algorithm(config: EmulatorConfig) -> str:
    """``striped`` (KRaft ``StripedReplicaPlacer``) or ``adminutils`` (``AdminUtils``).

    By default the kafka-4 flavor uses the KRaft placer and the kafka-3 flavor AdminUtils, the
    placer of ZooKeeper-mode 3.x clusters; a KRaft 3.x broker uses the striped placer, which
    ``EmulatorConfig.placement = "striped"`` selects (FIDELITY.md).
    """
    if config.placement != "auto":
        return config.placement
    return "striped" if config.flavor == Flavor.KAFKA_4 else "adminutils"


def place_replicas(
    config: EmulatorConfig, brokers: Sequence[BrokerInfo], count: int, rf: int, first: int,
    *, rng: JavaRandomSource, fenced: frozenset[int] = frozenset(), partition0_leader: int | None = None,
) -> list[list[int]]:
    """The seam where topic creation asks Kafka's own placement algorithm for replicas."""
    if rf > len(brokers):
        # KRaft's placer (StripedReplicaPlacer) message, as Kafka 3.9 and 4.4 send it.
        cordoned = (" or some brokers have all their log directories cordoned"
                    if config.flavor == Flavor.KAFKA_4 else "")
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be "
            f"reached because only {len(brokers)} broker(s) are registered{cordoned}.",
        )
    placed = [placement.BrokerInfo(b.node_id, b.rack, b.node_id in fenced) for b in sorted(brokers, key=_id)]
    algorithm = placement_algorithm(config)
    try:
        if algorithm == "striped":
            return placement.place_replicas(placed, count, rf, algorithm="striped", rng=rng)
        # AdminZkClient.addPartitions: start at partition 0's leader, continue the partition ids.
        start = -1
        if first > 0 and partition0_leader is not None:
            start = max(0, next((i for i, b in enumerate(placed) if b.id >= partition0_leader), 0))
        return placement.place_replicas(placed, count, rf, algorithm="adminutils", rng=rng,
                                        fixed_start_index=start, start_partition_id=first if first > 0 else -1)
    except placement.PlacementError as exc:
        raise KafkaError(ErrorCode[exc.error_name], str(exc)) from exc


def _id(broker: BrokerInfo) -> int:
    return broker.node_id


def _invalid_topic_reason(name: str) -> str | None:
    """``Topic.detectInvalidTopic``: why a name is illegal, or None."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name.encode("utf-16-le")) // 2 > _MAX_TOPIC_LENGTH:  # Java String.length: UTF-16 units
        return f"the length of '{name}' is longer than the max allowed length {_MAX_TOPIC_LENGTH}"
    if not _LEGAL_TOPIC.match(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def validate_topic_name(name: str) -> None:
    """``Topic.validate``: INVALID_TOPIC_EXCEPTION (17) with the controller's message (Kafka 3.9 and 4.4)."""
    reason = _invalid_topic_reason(name)
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC, f"Topic name is invalid: {reason}")


def is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def is_internal_topic(name: str) -> bool:
    """``Topic.isInternal``: the offsets and transaction-state topics."""
    return name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)


class ClusterMetadata:
    """Brokers and topics. Mutated only from the event loop's thread.

    Topic creation follows KRaft's ``ReplicationControlManager.createTopic``: defaults
    for -1, manual assignments validated as ``validateManualPartitionAssignment``
    does, and ``validate_only`` that checks everything but changes nothing.
    """

    def __init__(self, config: EmulatorConfig, brokers: Sequence[BrokerInfo]) -> None:
        self.config = config
        self.cluster_id = config.cluster_id
        self.brokers: dict[int, BrokerInfo] = {b.node_id: b for b in brokers}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = min(self.brokers)
        self.fenced: set[int] = set()
        seed = config.seed if config.seed is not None else random.getrandbits(48)
        self._placement_rng = JavaRandom(seed)
        self._listeners: list[Callable[[str, TopicInfo | None], None]] = []

    def on_change(self, listener: Callable[[str, TopicInfo | None], None]) -> None:
        """Be told (topic name, new info or None when deleted) when a topic changes."""
        self._listeners.append(listener)

    def live_brokers(self) -> list[BrokerInfo]:
        return [self.brokers[k] for k in sorted(self.brokers) if k not in self.fenced]

    # -- topics ------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        *,
        internal: bool = False,
        assignments: dict[int, list[int]] | None = None,
        configs: dict[str, str | None] | None = None,
        validate_only: bool = False,
    ) -> TopicInfo:
        """Create (or with ``validate_only`` just check) a topic; raises KafkaError."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        clean_configs = topic_configs.validate(configs or {}, self.config.flavor)
        if assignments:
            replicas = self._manual_replicas(assignments, partitions, replication_factor)
        else:
            replicas = self._placed_replicas(partitions, replication_factor)
        info = TopicInfo(name, self._topic_id(name), [PartitionInfo(p, r) for p, r in enumerate(replicas)],
                         internal=internal or is_internal_topic(name), configs=clean_configs)
        if not validate_only:
            self.topics[name] = info
            self._notify(name, info)
        return info

    def _placed_replicas(self, partitions: int, replication_factor: int) -> list[list[int]]:
        if partitions == -1:
            partitions = self.config.num_partitions
        if replication_factor == -1:
            replication_factor = min(self.config.default_replication_factor, len(self.live_brokers()))
        if partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        return self._place(partitions, replication_factor, 0)

    def _manual_replicas(self, assignments: dict[int, list[int]], partitions: int, rf: int) -> list[list[int]]:
        if partitions != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "A manual partition assignment was specified, but numPartitions was not set to -1.")
        if rf != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                             "but replicationFactor was not set to -1.")
        for replicas in assignments.values():
            self._check_manual(replicas, len(next(iter(assignments.values()))))
        if sorted(assignments) != list(range(len(assignments))):
            raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence")
        return [list(assignments[p]) for p in range(len(assignments))]

    def _check_manual(self, replicas: list[int], expected_rf: int) -> None:
        """``ReplicationControlManager.validateManualPartitionAssignment``."""
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        seen: set[int] = set()
        for broker in replicas:
            if broker in seen:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "The manual partition assignment "
                                 f"includes the broker {broker} more than once.")
            seen.add(broker)
            if broker not in self.brokers:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "The manual partition assignment "
                                 f"includes broker {broker}, but no such broker is registered.")
        if len(replicas) != expected_rf:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "The manual partition assignment includes "
                             f"a partition with {len(replicas)} replica(s), but this is not consistent with "
                             f"previous partitions, which have {expected_rf} replica(s).")

    def add_partitions(
        self, name: str, total: int, assignments: list[list[int]] | None = None, *, validate_only: bool = False
    ) -> TopicInfo:
        """CreatePartitions (``ReplicationControlManager.createPartitions``); raises KafkaError."""
        info = self.topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = len(info.partitions)
        if total < current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {current} "
                             f"partition(s); {total} would not be an increase.")
        if total == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        rf = len(info.partitions[0].replicas)
        if assignments is not None:
            new = self._checked_additions(assignments, total - current, rf)
        else:
            new = self._place(total - current, rf, current, info.partitions[0].replicas[0])
        if not validate_only:
            info.partitions.extend(PartitionInfo(current + i, r) for i, r in enumerate(new))
            self._notify(name, info)
        return info

    def _checked_additions(self, assignments: list[list[int]], count: int, rf: int) -> list[list[int]]:
        if len(assignments) != count:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, f"Attempted to add {count} additional "
                             f"partition(s), but only {len(assignments)} assignment(s) were specified.")
        for replicas in assignments:
            self._check_manual(replicas, rf)
        return [list(r) for r in assignments]

    def delete_topic(self, name: str) -> TopicInfo:
        info = self.topics.pop(name, None)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        self._notify(name, None)
        return info

    def restore_topic(self, info: TopicInfo) -> None:
        """Put back a topic read from a data directory (``serve --data-dir``); no listener is told.

        Every broker starts alive, so each partition's replicas are all in sync again and the first one
        leads; a leader that differs from the stored one bumps the leader epoch, as the controller's
        ``PartitionChangeBuilder`` does."""
        for p in info.partitions:
            p.isr = [r for r in p.replicas if r in self.brokers] or list(p.replicas)
            leader = p.isr[0]
            if leader != p.leader_id:
                p.leader_id = leader
                p.leader_epoch += 1
        self.topics[info.name] = info

    def replace_configs(self, name: str, configs: dict[str, str]) -> None:
        """A topic's new config overrides (IncrementalAlterConfigs/AlterConfigs, already validated)."""
        info = self.topics[name]
        info.configs = dict(configs)
        self._notify(name, info)

    def leadership_changed(self, name: str) -> None:
        """A topic's leaders or replicas were changed in place (ElectLeaders, AlterPartitionReassignments)."""
        self._notify(name, self.topics[name])

    def reassign(self, name: str, index: int, replicas: list[int]) -> None:
        """A partition's new replica set (AlterPartitionReassignments; the new replicas catch up at once).

        The ISR becomes the new replicas that are not fenced; a leader outside the new set (or fenced) is
        replaced as ``PartitionChangeBuilder`` does: the first new replica in the ISR, with a new epoch."""
        self._check_manual(replicas, len(replicas))
        p = self.topics[name].partitions[index]
        p.replicas = list(replicas)
        p.isr = [r for r in replicas if r not in self.fenced]
        if p.leader_id not in p.isr:
            self._elect(p)
        self._notify(name, self.topics[name])

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition(self, name: str, index: int) -> PartitionInfo | None:
        info = self.topics.get(name)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        return info.partitions[index]

    def ensure_offsets_topic(self) -> TopicInfo:
        """``__consumer_offsets``, created on first use as Kafka does on the first FindCoordinator."""
        info = self.topics.get(OFFSETS_TOPIC)
        if info is None:
            rf = min(3, len(self.brokers))
            info = self.create_topic(
                OFFSETS_TOPIC, self.config.group.offsets_topic_num_partitions, rf, internal=True
            )
        return info

    # -- broker liveness (KRaft fences a broker whose heartbeats stop) ---------------------

    def broker_stopped(self, node_id: int) -> None:
        """Fence a broker: drop it from every ISR and move leadership as KRaft's controller does.

        ``PartitionChangeBuilder``: the new leader is the first replica, in replica
        order, that is in the ISR and not fenced; none -> leader -1. Every leader
        change bumps the leader epoch.
        """
        self.fenced.add(node_id)
        for name, info in self.topics.items():
            changed = False
            for p in info.partitions:
                if node_id in p.isr and len(p.isr) > 1:
                    p.isr.remove(node_id)
                    changed = True
                if p.leader_id == node_id:
                    self._elect(p)
                    changed = True
            if changed:
                self._notify(name, info)

    def broker_started(self, node_id: int) -> None:
        """Unfence a broker: it rejoins the ISRs (it catches up at once) and leads leaderless partitions."""
        self.fenced.discard(node_id)
        for name, info in self.topics.items():
            for p in info.partitions:
                if node_id in p.replicas and node_id not in p.isr:
                    p.isr.append(node_id)
                if p.leader_id == -1 or p.leader_id in self.fenced:
                    self._elect(p)
            self._notify(name, info)

    def _elect(self, p: PartitionInfo) -> None:
        candidates = [r for r in p.replicas if r in p.isr and r not in self.fenced]
        new_leader = candidates[0] if candidates else -1
        if new_leader != p.leader_id:
            p.leader_id = new_leader
            p.leader_epoch += 1

    def _place(self, count: int, rf: int, first: int, partition0_leader: int | None = None) -> list[list[int]]:
        # One long-lived Random, as a KRaft controller keeps one for its whole life.
        return place_replicas(self.config, self.live_brokers(), count, rf, first, rng=self._placement_rng,
                              fenced=frozenset(self.fenced), partition0_leader=partition0_leader)

    def _topic_id(self, name: str) -> uuid.UUID:
        if self.config.seed is None:
            return uuid.uuid4()
        return uuid.uuid5(uuid.NAMESPACE_URL, f"rebalance-lab:{self.config.seed}:{name}:{len(self.topics)}")

    def _notify(self, name: str, info: TopicInfo | None) -> None:
        for listener in self._listeners:
            listener(name, info)
