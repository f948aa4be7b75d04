"""ConsumerGroupDescribe and what the other group APIs ask of consumer groups (spec/kip848.md §1.4, §8;
Kafka 4.4.0 ``consumerGroupDescribe``, ``ConsumerGroup.validateOffsetCommit``/``validateOffsetFetch``,
``validateDeleteGroup``, ``isSubscribedToTopic``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping

from rebalance_lab.coordinator.consumer.context import Core
from rebalance_lab.coordinator.consumer.leave import consumer_group
from rebalance_lab.coordinator.consumer.messages import (
    DescribedGroup,
    DescribedMember,
    DescribedTopic,
    DescribeInput,
    DescribeResult,
)
from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

# (topic name, topic id, partition) -> raises KafkaError for that partition (KIP-1251 commit check)
PartitionCheck = Callable[[str, uuid.UUID, int], None]


def describe(core: Core, inp: DescribeInput, topics: TopicsImage) -> DescribeResult:
    groups = []
    for group_id in inp.group_ids:
        try:
            group = consumer_group(core, group_id)
        except KafkaError as exc:
            groups.append(DescribedGroup(group_id, exc.code, str(exc)))
            continue
        groups.append(described(core, group, topics))
    return DescribeResult(tuple(groups))


def described(core: Core, group: ConsumerGroup, topics: TopicsImage) -> DescribedGroup:
    """``ConsumerGroup.asDescribedGroup``: members in the order of Kafka's member map (``TimelineHashMap``)."""
    members = tuple(_member(group.members[m], group.target.get(m, {}), topics) for m in group.member_order)
    return DescribedGroup(group.group_id, ErrorCode.NONE, None, group.state.value, group.group_epoch,
                          group.assignment_epoch, group.preferred_assignor() or core.default_assignor(), members)


def _member(m: ConsumerMember, target: Mapping[uuid.UUID, frozenset[int]], topics: TopicsImage) -> DescribedMember:
    """4.4.0: the Assignment lists assigned *and* pending-revocation partitions; topics gone from the image
    are left out."""
    owned: dict[uuid.UUID, set[int]] = {}
    for source in (m.assigned, m.pending_revocation):
        for topic_id, partitions in source.items():
            owned.setdefault(topic_id, set()).update(partitions)
    return DescribedMember(
        m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
        tuple(sorted(m.subscribed_topic_names)), m.subscribed_topic_regex,
        _topics(owned, topics), _topics(target, topics), 0 if m.uses_classic_protocol else 1,
    )


def _topics(assignment: Mapping[uuid.UUID, set[int] | frozenset[int]],
            topics: TopicsImage) -> tuple[DescribedTopic, ...]:
    found = []
    for topic_id, partitions in assignment.items():
        name = topics.name_of(topic_id)
        if name is not None:
            found.append(DescribedTopic(topic_id, name, tuple(sorted(partitions))))
    return tuple(found)


def list_entries(core: Core) -> list[tuple[str, str, str]]:
    """(group id, state, type) for ListGroups."""
    return [(g.group_id, g.state.value, "consumer") for g in core.groups.values()]


def listed_entries(core: Core, snapshot: tuple[ConsumerGroup, ...]) -> Iterator[tuple[str, str, str]]:
    """:func:`list_entries` of the groups of ``snapshot`` (the table's groups when the listing began) still in the
    table, each group's state read as it is reached: ListGroups over 200,000 groups is read in steps by its
    handler (issue 17), as for the classic groups (``classic.describe.listed_groups``)."""
    for g in snapshot:
        if core.groups.get(g.group_id) is g:
            yield g.group_id, g.state.value, "consumer"


def validate_delete(core: Core, group_id: str) -> None:
    """``validateDeleteGroup``: only an Empty group (NON_EMPTY_GROUP otherwise)."""
    group = consumer_group(core, group_id)
    if group.members:
        raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")


def validate_offset_commit(group: ConsumerGroup, member_id: str, epoch: int, api_version: int,
                           transactional: bool = False, instance_id: str | None = None) -> PartitionCheck | None:
    """``ConsumerGroup.validateOffsetCommit`` (4.4.0, KIP-1251): None accepts every partition; otherwise a
    per-partition check for a commit at an older epoch than the member's."""
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    if not transactional and not member.uses_classic_protocol and api_version < 9:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                         "using the consumer group protocol")
    if epoch == member.member_epoch:
        return None
    if epoch > member.member_epoch:
        raise _stale(member, f"Received {_what(member)} {epoch} is newer than current member epoch "
                             f"{member.member_epoch}.")
    return _assignment_epoch_check(member, epoch)


def _what(member: ConsumerMember) -> str:
    return "generation id" if member.uses_classic_protocol else "member epoch"


def _stale(member: ConsumerMember, message: str) -> KafkaError:
    code = ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
    return KafkaError(code, message)


def _assignment_epoch_check(member: ConsumerMember, epoch: int) -> PartitionCheck:
    """``createAssignmentEpochValidator``: the partition must be held, at an assignment epoch <= ``epoch``."""
    def check(topic: str, topic_id: uuid.UUID, partition: int) -> None:
        held = member.assigned.get(topic_id, {}).get(partition)
        if held is None:
            held = member.pending_revocation.get(topic_id, {}).get(partition)
        if held is None:
            raise _stale(member, f"Partition {topic}-{partition} is not assigned or pending revocation for member.")
        if epoch < held:
            raise _stale(member, f"Received {_what(member)} {epoch} is older than assignment epoch {held} for "
                                 f"partition {topic}-{partition}.")
    return check


def validate_offset_fetch(group: ConsumerGroup, member_id: str | None, epoch: int) -> None:
    """``ConsumerGroup.validateOffsetFetch``: only when the request names a member or an epoch >= 0."""
    if member_id is None and epoch < 0:
        return
    if member_id is None:  # 4.4.0 looks a null id up in its TimelineHashMap: a NullPointerException
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "")
    member = group.members.get(member_id)
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    if epoch != member.member_epoch:
        what = "generation id" if member.uses_classic_protocol else "member epoch"
        raise _stale(member, f"The received {what} {epoch} does not match the expected member epoch "
                             f"{member.member_epoch}.")
