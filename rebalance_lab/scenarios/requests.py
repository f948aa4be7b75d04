"""Raw request bodies for every scenario action, built through the codec seam.

Values arrive already resolved (member ids, generations, group ids); this module only
knows field names and which version carries which shape.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.clients.member import wire
from rebalance_lab.clients.member.calls import LeaveGroupCall
from rebalance_lab.protocol import codec
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.scenarios.model import ProtocolSpec, ScenarioError

API_KEYS = {"Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11,
            "Heartbeat": 12, "LeaveGroup": 13, "SyncGroup": 14, "DescribeGroups": 15, "ListGroups": 16,
            "CreateTopics": 19, "DeleteTopics": 20, "CreatePartitions": 37, "DeleteGroups": 42,
            "ConsumerGroupHeartbeat": 68, "ConsumerGroupDescribe": 69}
# Highest versions a scenario uses unless it asks for others: the newest that Kafka 3.9
# and 4.x both serve, so one transcript fits both brokers.
PREFERRED = {"Metadata": 12, "OffsetCommit": 9, "OffsetFetch": 9, "FindCoordinator": 4, "JoinGroup": 9,
             "Heartbeat": 4, "LeaveGroup": 5, "SyncGroup": 5, "DescribeGroups": 5, "ListGroups": 5,
             "CreateTopics": 7, "DeleteTopics": 6, "CreatePartitions": 3, "DeleteGroups": 2,
             "ConsumerGroupHeartbeat": 1, "ConsumerGroupDescribe": 1}


TopicNamer = Callable[[str], str]


def _same(name: str) -> str:
    return name


def protocol_metadata(spec: ProtocolSpec, topic: TopicNamer = _same) -> bytes:
    """Raw bytes as given, else a consumer-protocol subscription (topic names via ``topic``)."""
    if spec.raw is not None:
        return spec.raw
    subscription = Subscription(
        topics=tuple(topic(t) for t in spec.topics),
        user_data=spec.user_data,
        owned_partitions=tuple(TopicPartition(topic(t), p) for t, p in spec.owned),
        generation_id=spec.generation,
        rack_id=spec.rack,
    )
    return cp.encode_subscription(subscription, spec.version)


def assignment_bytes(value: Any, topic: TopicNamer = _same) -> bytes:
    """``{t: [0, 1]}`` (consumer protocol v3), a hex string, or null/"" for empty bytes."""
    if value is None or value == "":
        return b""
    if isinstance(value, str):
        try:
            return bytes.fromhex(value.replace(" ", "").removeprefix("0x"))
        except ValueError as exc:
            raise ScenarioError(f"assignment {value!r} is neither a mapping nor hex") from exc
    if isinstance(value, Mapping):
        partitions = tuple(TopicPartition(topic(str(t)), int(p)) for t, ps in value.items() for p in (ps or ()))
        return cp.encode_assignment(Assignment(partitions))
    raise ScenarioError(f"cannot encode assignment {value!r}")


def join(group_id: str, version: int, *, member_id: str, instance_id: str | None, protocol_type: str,
         protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int, rebalance_timeout_ms: int,
         reason: str | None) -> Any:
    item = codec.data_class(codec.request_type(11), "JoinGroupRequestProtocol")
    return codec.new_request(
        11, version, group_id=group_id, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=instance_id,
        protocol_type=protocol_type, protocols=[item(name=n, metadata=m) for n, m in protocols], reason=reason,
    )


def sync(group_id: str, version: int, *, generation: int, member_id: str, instance_id: str | None,
         protocol_type: str | None, protocol_name: str | None, assignments: Sequence[tuple[str, bytes]]) -> Any:
    item = codec.data_class(codec.request_type(14), "SyncGroupRequestAssignment")
    return codec.new_request(
        14, version, group_id=group_id, generation_id=generation, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
        assignments=[item(member_id=m, assignment=a) for m, a in assignments],
    )


def heartbeat(group_id: str, version: int, *, generation: int, member_id: str, instance_id: str | None) -> Any:
    return codec.new_request(12, version, group_id=group_id, generation_id=generation, member_id=member_id,
                             group_instance_id=instance_id)


def leave(group_id: str, version: int, identities: Sequence[LeaveGroupCall]) -> Any:
    return wire.leave_request(group_id, identities, version)


def commit(group_id: str, version: int, *, generation: int, member_id: str, instance_id: str | None,
           offsets: Sequence[tuple[str, int, int]], metadata: str | None) -> Any:
    cls = codec.request_type(8)
    topic_cls, partition_cls = cls.OffsetCommitRequestTopic, cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, offset in offsets:
        by_topic.setdefault(topic, []).append(partition_cls(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
            commit_timestamp=-1, committed_metadata=metadata))
    topics = [topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()]
    return codec.new_request(8, version, group_id=group_id, generation_id_or_member_epoch=generation,
                             member_id=member_id, group_instance_id=instance_id, retention_time_ms=-1,
                             topics=topics)


def fetch(group_id: str, version: int, topics: Mapping[str, Sequence[int]] | None, require_stable: bool,
          member: tuple[str | None, int] = (None, -1)) -> Any:
    """``member``: (MemberId, MemberEpoch) of v9+, sent by consumer-protocol members (KIP-848)."""
    cls = codec.request_type(9)
    if version >= 8:
        group_cls = cls.OffsetFetchRequestGroup
        topic_cls = group_cls.OffsetFetchRequestTopics
        wanted = None if topics is None else [topic_cls(name=t, partition_indexes=list(ps)) for t, ps in topics.items()]
        group = group_cls(group_id=group_id, member_id=member[0], member_epoch=member[1], topics=wanted)
        return codec.new_request(9, version, groups=[group], require_stable=require_stable)
    topic_cls = cls.OffsetFetchRequestTopic
    wanted = None if topics is None else [topic_cls(name=t, partition_indexes=list(ps)) for t, ps in topics.items()]
    return codec.new_request(9, version, group_id=group_id, topics=wanted, require_stable=require_stable)


def describe(version: int, groups: Sequence[str], include_authorized_operations: bool) -> Any:
    return codec.new_request(15, version, groups=list(groups),
                             include_authorized_operations=include_authorized_operations)


def list_groups(version: int, states: Sequence[str], types: Sequence[str]) -> Any:
    return codec.new_request(16, version, states_filter=list(states), types_filter=list(types))


def delete_groups(version: int, groups: Sequence[str]) -> Any:
    return codec.new_request(42, version, groups_names=list(groups))


def find_coordinator(version: int, keys: Sequence[str], key_type: int) -> Any:
    """v4+ carries every key (a batch); earlier versions the first one."""
    if version >= 4:
        return codec.new_request(10, version, key_type=key_type, coordinator_keys=list(keys))
    return codec.new_request(10, version, key=keys[0], key_type=key_type)


def create_topics(version: int, topics: Mapping[str, int]) -> Any:
    cls = codec.request_type(19)
    creatable = [cls.CreatableTopic(name=t, num_partitions=n, replication_factor=-1, assignments=[], configs=[])
                 for t, n in topics.items()]
    return codec.new_request(19, version, topics=creatable, timeout_ms=10_000, validate_only=False)


def create_partitions(version: int, topic: str, count: int) -> Any:
    cls = codec.request_type(37)
    return codec.new_request(37, version, topics=[cls.CreatePartitionsTopic(name=topic, count=count, assignments=None)],
                             timeout_ms=10_000, validate_only=False)


def delete_topics(version: int, topic: str) -> Any:
    if version >= 6:
        state = codec.data_class(codec.request_type(20), "DeleteTopicState")
        return codec.new_request(20, version, topics=[state(name=topic, topic_id=_ZERO_UUID)], timeout_ms=10_000)
    return codec.new_request(20, version, topic_names=[topic], timeout_ms=10_000)


_ZERO_UUID = uuid.UUID(int=0)


def consumer_heartbeat(version: int, **fields: Any) -> Any:
    """ConsumerGroupHeartbeat (68): group_id, member_id, member_epoch, instance_id, rack_id,
    rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex (v1+), server_assignor,
    topic_partitions [(topic id, [partitions])] or None."""
    owned = fields.pop("topic_partitions")
    if version < 1:
        fields.pop("subscribed_topic_regex", None)
    item = codec.data_class(codec.request_type(68), "TopicPartitions")
    partitions = None if owned is None else [item(topic_id=t, partitions=list(ps)) for t, ps in owned]
    return codec.new_request(68, version, topic_partitions=partitions, **fields)


def consumer_describe(version: int, groups: Sequence[str], include_authorized_operations: bool) -> Any:
    return codec.new_request(69, version, group_ids=list(groups),
                             include_authorized_operations=include_authorized_operations)
