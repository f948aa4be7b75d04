"""Big valid requests of the APIs that take lists (issue 17, "Fairness"): benchmarks/loop_stalls.py and
tests/integration/test_big_requests.py. Each builder returns (api key, version, fields) for ``n`` entries:
partitions of the topics ``big-0``..``big-19`` (10,000 partitions each, the per-topic cap), or names
that do not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from rebalance_lab.protocol import codec

TOPICS, PARTITIONS = 20, 10_000
ZERO = uuid.UUID(int=0)


def _cls(api_key: int, *path: str) -> Any:
    owner = codec.request_type(api_key)
    for name in path:
        owner = codec.data_class(owner, name)
    return owner


def _spread(n: int) -> list[tuple[str, list[int]]]:
    """``n`` partitions of the existing big topics, whole topics first."""
    out: list[tuple[str, list[int]]] = []
    for t in range(TOPICS):
        take = min(PARTITIONS, n - t * PARTITIONS)
        if take <= 0:
            break
        out.append((f"big-{t}", list(range(take))))
    return out


def offset_commit(n: int) -> tuple[int, int, dict[str, Any]]:
    topic = _cls(8, "OffsetCommitRequestTopic")
    part = _cls(8, "OffsetCommitRequestTopic", "OffsetCommitRequestPartition")
    topics = [topic(name=name, partitions=[part(partition_index=p, committed_offset=p, committed_leader_epoch=-1,
                                                committed_metadata="") for p in ps]) for name, ps in _spread(n)]
    return 8, 8, dict(group_id="bench", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                      topics=topics)


def offset_fetch(n: int) -> tuple[int, int, dict[str, Any]]:
    group, topic = _cls(9, "OffsetFetchRequestGroup"), _cls(9, "OffsetFetchRequestGroup", "OffsetFetchRequestTopics")
    topics = [topic(name=name, partition_indexes=ps) for name, ps in _spread(n)]
    return 9, 8, dict(groups=[group(group_id="bench", topics=topics)], require_stable=False)


def list_offsets(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(2, "ListOffsetsTopic"), _cls(2, "ListOffsetsTopic", "ListOffsetsPartition")
    topics = [topic(name=name, partitions=[part(partition_index=p, current_leader_epoch=-1, timestamp=-1)
                                           for p in ps]) for name, ps in _spread(n)]
    return 2, 7, dict(replica_id=-1, isolation_level=0, topics=topics)


def delete_topics(n: int) -> tuple[int, int, dict[str, Any]]:
    state = _cls(20, "DeleteTopicState")
    return 20, 6, dict(topics=[state(name=f"no-such-topic-{i}", topic_id=ZERO) for i in range(n)], timeout_ms=30_000)


def create_topics(n: int) -> tuple[int, int, dict[str, Any]]:
    topic = _cls(19, "CreatableTopic")
    topics = [topic(name=f"new-topic-{i}", num_partitions=1, replication_factor=1, assignments=[], configs=[])
              for i in range(n)]
    return 19, 7, dict(topics=topics, timeout_ms=30_000, validate_only=True)


def describe_groups(n: int) -> tuple[int, int, dict[str, Any]]:
    return 15, 5, dict(groups=[f"no-such-group-{i}" for i in range(n)], include_authorized_operations=False)


def delete_groups(n: int) -> tuple[int, int, dict[str, Any]]:
    return 42, 2, dict(groups_names=[f"no-such-group-{i}" for i in range(n)])


def describe_topic_partitions(n: int) -> tuple[int, int, dict[str, Any]]:
    topic = _cls(75, "TopicRequest")
    return 75, 0, dict(topics=[topic(name=f"no-such-topic-{i}") for i in range(n)], response_partition_limit=2000,
                       cursor=None)


def delete_records(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(21, "DeleteRecordsTopic"), _cls(21, "DeleteRecordsTopic", "DeleteRecordsPartition")
    topics = [topic(name=name, partitions=[part(partition_index=p, offset=-1) for p in ps]) for name, ps in _spread(n)]
    return 21, 2, dict(topics=topics, timeout_ms=30_000)


def offset_delete(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(47, "OffsetDeleteRequestTopic"), _cls(47, "OffsetDeleteRequestTopic",
                                                             "OffsetDeleteRequestPartition")
    topics = [topic(name=name, partitions=[part(partition_index=p) for p in ps]) for name, ps in _spread(n)]
    return 47, 0, dict(group_id="bench", topics=topics)


def txn_offset_commit(n: int) -> tuple[int, int, dict[str, Any]]:
    topic = _cls(28, "TxnOffsetCommitRequestTopic")
    part = _cls(28, "TxnOffsetCommitRequestTopic", "TxnOffsetCommitRequestPartition")
    topics = [topic(name=name, partitions=[part(partition_index=p, committed_offset=p, committed_leader_epoch=-1,
                                                committed_metadata="") for p in ps]) for name, ps in _spread(n)]
    return 28, 4, dict(transactional_id="bench-txn", group_id="bench", producer_id=1000, producer_epoch=0,
                       generation_id=-1, member_id="", group_instance_id=None, topics=topics)


def describe_configs(n: int) -> tuple[int, int, dict[str, Any]]:
    resource = _cls(32, "DescribeConfigsResource")  # resource type 2: topic
    resources = [resource(resource_type=2, resource_name=f"no-such-topic-{i}", configuration_keys=None)
                 for i in range(n)]
    return 32, 4, dict(resources=resources, include_synonyms=False, include_documentation=False)


def create_acls(n: int) -> tuple[int, int, dict[str, Any]]:
    creation = _cls(30, "AclCreation")  # ALLOW (3) READ (3) on topic (2) "acl-i", literal (3)
    creations = [creation(resource_type=2, resource_name=f"acl-{i}", resource_pattern_type=3, principal="User:bench",
                          host="*", operation=3, permission_type=3) for i in range(n)]
    return 30, 3, dict(creations=creations)


def fetch(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(1, "FetchTopic"), _cls(1, "FetchTopic", "FetchPartition")
    topics = [topic(topic=name, partitions=[part(partition=p, current_leader_epoch=-1, fetch_offset=0,
                                                 last_fetched_epoch=-1, log_start_offset=-1,
                                                 partition_max_bytes=1024) for p in ps]) for name, ps in _spread(n)]
    return 1, 12, dict(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=[], rack_id="")


BUILDERS: dict[str, Callable[[int], tuple[int, int, dict[str, Any]]]] = {
    f.__name__: f for f in (offset_commit, offset_fetch, list_offsets, delete_topics, create_topics,
                            describe_groups, delete_groups, describe_topic_partitions,
                            delete_records, offset_delete, txn_offset_commit, describe_configs, create_acls,
                            fetch)
}


def frame(name: str, entries: int, correlation_id: int = 1) -> bytes:
    api_key, version, fields = BUILDERS[name](entries)
    return codec.encode_request(codec.new_request(api_key, version, **fields), correlation_id, "big")
