"""Rejecting a heartbeat before it changes anything (spec/kip848.md §2.1 step 5, §2.2; Kafka 4.4.0).

``validate_request`` is ``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``:
it runs before the request is routed to the group's shard, so the handler calls it before the
NOT_COORDINATOR check. The regex is not checked there: 4.4 compiles it only when it is new to
the group, inside the heartbeat (:mod:`.regex`). ``validate_member_epoch`` is
``GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, OwnedPartitions
from rebalance_lab.coordinator.consumer.model import ConsumerMember, EpochMap
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_JAVA_TRIMMED = "".join(map(chr, range(33)))  # Java's String.trim strips every char <= U+0020


def _blank(value: str | None) -> bool:
    """Java ``value.trim().isEmpty()``."""
    return value is not None and not value.lstrip(_JAVA_TRIMMED)


def invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, message)


def validate_request(inp: ConsumerGroupHeartbeatInput, assignors: Sequence[str]) -> None:
    """Raise the first rule that fails, in 4.4.0's order."""
    epoch = inp.member_epoch
    if (inp.api_version >= 1 or epoch > 0 or epoch == -1) and _blank(inp.member_id):
        raise invalid("MemberId can't be empty.")
    if _blank(inp.group_id):
        raise invalid("GroupId can't be empty.")
    if _blank(inp.instance_id):
        raise invalid("InstanceId can't be empty.")
    if _blank(inp.rack_id):
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        _validate_join(inp)
    elif epoch == -2 and inp.instance_id is None:
        raise invalid("InstanceId can't be null.")
    elif epoch < -2:
        raise invalid("MemberEpoch is invalid.")
    if inp.server_assignor is not None and inp.server_assignor not in assignors:
        raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {inp.server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(assignors)}.")


def _validate_join(inp: ConsumerGroupHeartbeatInput) -> None:
    if inp.rebalance_timeout_ms == -1:
        raise invalid("RebalanceTimeoutMs must be provided in first request.")
    if inp.topic_partitions is None or len(inp.topic_partitions) > 0:
        raise invalid("TopicPartitions must be empty when (re-)joining.")
    if inp.subscribed_topic_names is None and inp.subscribed_topic_regex is None:
        raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")


def validate_member_epoch(member: ConsumerMember, received: int, owned: OwnedPartitions | None) -> None:
    """KAFKA-19233 (in 4.4.0): epoch 0 is always accepted, so a fenced member may rejoin with its id."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise _fenced("greater", received, member.member_epoch)
    if received < member.member_epoch and (
            received != member.previous_member_epoch or not is_subset(owned, member.assigned)):
        raise _fenced("smaller", received, member.member_epoch)


def _fenced(which: str, received: int, known: int) -> KafkaError:
    return KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a {which} member epoch "
                      f"({received}) than the one known by the group coordinator ({known}). "
                      "The member must abandon all its partitions and rejoin.")


def is_subset(owned: OwnedPartitions | None, assigned: EpochMap) -> bool:
    """``GroupMetadataManager.isSubset``: a null owned list is not a subset."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        held = assigned.get(topic_id)
        if held is None or any(p not in held for p in partitions):
            return False
    return True
