"""The classic group APIs' answers for KIP-848 consumer groups (Kafka 4.4.0; spec/kip848.md §8).

OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups and DeleteGroups serve both
kinds of group. Their handlers ask here first whether the consumer coordinator holds the group id
(a group id is never both, as in Kafka's one ``groups`` map) and, if it does, how 4.4.0 answers;
otherwise the classic coordinator answers as before. The verdicts are the consumer coordinator's
(``ConsumerGroup.validateOffsetCommit``/``validateOffsetFetch``/``validateDeleteGroup``); this
module only says which one applies and in what form the classic API shows it. Each rule here was
checked against a real 4.4.0 broker (tests/integration/test_consumer_group_surface_wire.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rebalance_lab.coordinator.classic.admin_messages import DescribedGroup, ListedGroup
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # the KIP-848 package is imported when its coordinator is made (issue 22: start-up, first commit)
    from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator

_DESCRIBE_GROUP_ID_NOT_FOUND_FROM = 6  # KIP-1043


@dataclass(frozen=True)
class CommittedPartition:
    """A partition of an OffsetCommit that passed KafkaApis' pre-checks and the metadata-size rule."""

    topic: str
    topic_id: uuid.UUID
    partition: int


def consumer_groups(world: World) -> ConsumerGroupCoordinator:
    coordinator: ConsumerGroupCoordinator = service_of(world).consumer
    return coordinator


def holds(world: World, group_id: str) -> bool:
    """True when ``group_id`` is a consumer group (the classic coordinator then does not know it). Before the
    KIP-848 coordinator is made there is no consumer group, and asking does not make it."""
    service = service_of(world)
    return service.consumer_started and service.consumer.has_group(group_id)


# -- offsets -----------------------------------------------------------------------------------------------------

def offset_commit_error(world: World, group_id: str, member_id: str, epoch: int, instance_id: str | None,
                        api_version: int, partitions: Sequence[CommittedPartition]) -> ErrorCode:
    """One verdict for the whole OffsetCommit (``OffsetMetadataManager.commitOffset``).

    4.4.0 (KIP-1251): a commit at an epoch older than the member's is checked partition by partition
    against the epochs the partitions were assigned at; the first partition that fails throws, so the
    whole request answers its error. Partitions with too-large metadata are never checked.
    """
    try:
        check = consumer_groups(world).validate_offset_commit(group_id, member_id, epoch, api_version,
                                                              instance_id=instance_id)
        if check is not None:
            for p in partitions:
                check(p.topic, p.topic_id, p.partition)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


def offset_fetch_error(world: World, group_id: str, member_id: str | None, epoch: int) -> ErrorCode:
    """``ConsumerGroup.validateOffsetFetch``: a group-level error; the fetch then lists no topics."""
    try:
        consumer_groups(world).validate_offset_fetch(group_id, member_id, epoch)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


def subscribed_topics(world: World, group_id: str, topics: Iterable[str]) -> frozenset[str]:
    """Which of ``topics`` a member of the group subscribes to (OffsetDelete answers them
    GROUP_SUBSCRIBED_TO_TOPIC; a consumer group has no state check, ``validateOffsetDelete``)."""
    consumer = consumer_groups(world)
    return frozenset(t for t in topics if consumer.is_subscribed_to(group_id, t))


# -- ListGroups, DescribeGroups, DeleteGroups -----------------------------------------------------------------

def listing(world: World, states_filter: Iterable[str], types_filter: Iterable[str]
            ) -> tuple[int, Iterator[ListedGroup]]:
    """Consumer groups for ListGroups (``GroupMetadataManager.listGroups``): protocol type and group type
    "consumer". The states filter is lower-cased and trimmed; the types filter only lower-cased
    (``GroupType.parse``: " consumer " is an unknown type and matches nothing). Returned as they are reached,
    with how many there may be: ListGroups reads them in steps (issue 17: listing 200,000 consumer groups at
    once held the loop)."""
    states = {s.lower().strip() for s in states_filter}
    types = {t.lower() for t in types_filter}
    if (types and "consumer" not in types) or not service_of(world).consumer_started:
        return 0, iter(())
    count, entries = consumer_groups(world).listing()
    return count, (ListedGroup(group_id, "consumer", state, group_type) for group_id, state, group_type in entries
                   if not states or state.lower() in states)


def described_as_classic(group_id: str, api_version: int, unknown: DescribedGroup) -> DescribedGroup:
    """DescribeGroups of a consumer group: the classic lookup fails (``GMM.describeGroups``), so the entry
    is the one an unknown group gets (a Dead placeholder before v6), but v6 names why."""
    if api_version < _DESCRIBE_GROUP_ID_NOT_FOUND_FROM:
        return unknown
    return DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, unknown.state, "", "", (),
                          unknown.authorized_operations, f"Group {group_id} is not a classic group.")


def delete(world: World, group_id: str) -> ErrorCode:
    """DeleteGroups of a consumer group: Empty only (NON_EMPTY_GROUP otherwise). The deletion record
    reaches the offsets service, which drops the group's offsets with it."""
    service = service_of(world)
    error, fx = consumer_groups(world).delete_group(world.now_ms(), group_id)
    service.apply(fx)
    return error
