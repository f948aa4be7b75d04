"""The emulated cluster's metadata: brokers, topics, partitions and their replicas.

All brokers live in one process; each has its own loopback listener. Replica
placement goes through one seam, :func:`place_replicas`, so the exact Kafka
algorithms (``AdminUtils`` for the kafka-3 flavor, KRaft ``StripedReplicaPlacer``
for kafka-4; spec/assignors.md §9) plug in without touching callers.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

OFFSETS_TOPIC = "__consumer_offsets"
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
    partition: int
    replicas: list[int]
    leader_epoch: int = 0

    @property
    def leader(self) -> int:
        return self.replicas[0]


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionInfo] = field(default_factory=list)
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


# (brokers, partition count, replication factor, first partition id) -> replica lists
Placer = Callable[[Sequence[BrokerInfo], int, int, int], list[list[int]]]


def round_robin_placer(brokers: Sequence[BrokerInfo], count: int, rf: int, first: int) -> list[list[int]]:
    """A simple fallback: consecutive brokers, leaders rotating. Replaced by Kafka's placers."""
    ids = sorted(b.node_id for b in brokers)
    return [[ids[(first + p + r) % len(ids)] for r in range(rf)] for p in range(count)]


def place_replicas(
    flavor: Flavor, brokers: Sequence[BrokerInfo], count: int, rf: int, first: int, seed: int | None
) -> list[list[int]]:
    """The seam where topic creation asks Kafka's own placement algorithm for replicas."""
    if rf > len(brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {rf} larger than available brokers: {len(brokers)}.",
        )
    try:
        from rebalance_lab.clients import placement
    except ImportError:  # placement lands with the assignors work
        return round_robin_placer(brokers, count, rf, first)
    return placement.place_for_flavor(flavor.value, brokers, count, rf, first, seed)


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal")
    if len(name) > _MAX_TOPIC_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {_MAX_TOPIC_LENGTH} characters",
        )
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name {name!r} is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'",
        )


class ClusterMetadata:
    """Brokers and topics. Mutated only from the event loop's thread."""

    def __init__(self, config: EmulatorConfig, brokers: Sequence[BrokerInfo]) -> None:
        self.config = config
        self.cluster_id = config.cluster_id
        self.brokers: dict[int, BrokerInfo] = {b.node_id: b for b in brokers}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = min(self.brokers)
        self._listeners: list[Callable[[str, TopicInfo | None], None]] = []

    def on_change(self, listener: Callable[[str, TopicInfo | None], None]) -> None:
        """Be told (topic name, new info or None when deleted) when a topic changes."""
        self._listeners.append(listener)

    def live_brokers(self) -> list[BrokerInfo]:
        return [self.brokers[k] for k in sorted(self.brokers)]

    def create_topic(
        self, name: str, partitions: int, replication_factor: int = -1, *, internal: bool = False
    ) -> TopicInfo:
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if partitions == -1:
            partitions = self.config.num_partitions
        if replication_factor == -1:
            replication_factor = min(self.config.default_replication_factor, len(self.brokers))
        if partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        replicas = self._place(partitions, replication_factor, 0)
        info = TopicInfo(name, self._topic_id(name), [PartitionInfo(p, r) for p, r in enumerate(replicas)],
                         internal=internal)
        self.topics[name] = info
        self._notify(name, info)
        return info

    def add_partitions(self, name: str, total: int) -> TopicInfo:
        info = self.topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = len(info.partitions)
        if total < current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the requested {total}.",
            )
        if total == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        rf = len(info.partitions[0].replicas)
        for offset, replicas in enumerate(self._place(total - current, rf, current)):
            info.partitions.append(PartitionInfo(current + offset, replicas))
        self._notify(name, info)
        return info

    def delete_topic(self, name: str) -> None:
        if name not in self.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        del self.topics[name]
        self._notify(name, None)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def ensure_offsets_topic(self) -> TopicInfo:
        """``__consumer_offsets``, created on first use as Kafka does on the first FindCoordinator."""
        info = self.topics.get(OFFSETS_TOPIC)
        if info is None:
            rf = min(3, len(self.brokers))
            info = self.create_topic(
                OFFSETS_TOPIC, self.config.group.offsets_topic_num_partitions, rf, internal=True
            )
        return info

    def _place(self, count: int, rf: int, first: int) -> list[list[int]]:
        return place_replicas(self.config.flavor, self.live_brokers(), count, rf, first, self.config.seed)

    def _topic_id(self, name: str) -> uuid.UUID:
        if self.config.seed is None:
            return uuid.uuid4()
        return uuid.uuid5(uuid.NAMESPACE_URL, f"rebalance-lab:{self.config.seed}:{name}:{len(self.topics)}")

    def _notify(self, name: str, info: TopicInfo | None) -> None:
        for listener in self._listeners:
            listener(name, info)
