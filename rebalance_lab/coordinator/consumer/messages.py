"""What the consumer group's API takes and returns (typed, wire-free; STYLE.md principle 8)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from rebalance_lab.protocol.errors import ErrorCode

OwnedPartitions = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]  # TopicPartitions as sent


@dataclass(frozen=True)
class ConsumerGroupHeartbeatInput:
    """``ConsumerGroupHeartbeatRequest``; None/-1 mean "not sent, unchanged" as on the wire."""

    group_id: str
    member_id: str
    member_epoch: int
    api_version: int = 1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: OwnedPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    # The caller's DESCRIBE on a topic (None: no authorizer); Kafka 4.4.0 resolves a regex with the context of the
    # heartbeat that asked for it and keeps only the topics that principal may describe
    may_describe: Callable[[str], bool] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class HeartbeatResult:
    """``ConsumerGroupHeartbeatResponse``: an error answer has member id None, epoch 0, interval 0."""

    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[uuid.UUID, tuple[int, ...]] | None = None
    # the classic group of this id (Empty, or live and upgraded online) gives way: GroupRouting converts it out
    deletes_classic_group: bool = False

    @classmethod
    def failed(cls, error: ErrorCode, message: str | None) -> HeartbeatResult:
        return cls(error, message)


@dataclass(frozen=True)
class DescribeInput:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False
    api_version: int = 1


@dataclass(frozen=True)
class DescribedTopic:
    topic_id: uuid.UUID
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopic, ...]
    target_assignment: tuple[DescribedTopic, ...]
    member_type: int  # KIP-1099: 0 classic, 1 consumer


@dataclass(frozen=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class DescribeResult:
    groups: tuple[DescribedGroup, ...]
