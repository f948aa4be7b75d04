"""Big valid requests of the APIs that take lists (issue 17, "Fairness"): benchmarks/loop_stalls.py and
tests/integration/test_big_requests.py. Each builder returns (api key, version, fields) for ``n`` entries:
partitions of the topics ``big-0``..``big-19`` (10,000 partitions each, the per-topic cap), or names
that do not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.offsets import CommittedOffset
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.coordinator.transactions.batches import encode_batch
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec
from rebalance_lab.security.acls import Acl
from rebalance_lab.security.authorizer import StandardAuthorizer
from tests.integration.wire import RawConnection

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


def produce(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(0, "TopicProduceData"), _cls(0, "TopicProduceData", "PartitionProduceData")
    batch = encode_batch([(None, b"v")])  # one record each (acks=1: every append answered)
    topics = [topic(name=name, partition_data=[part(index=p, records=batch) for p in ps]) for name, ps in _spread(n)]
    return 0, 9, dict(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=topics)


def _alter(api_key: int, n: int, **operation: Any) -> tuple[int, int, dict[str, Any]]:
    resource, config = _cls(api_key, "AlterConfigsResource"), _cls(api_key, "AlterConfigsResource", "AlterableConfig")
    resources = [resource(resource_type=2, resource_name=f"no-such-topic-{i}",
                          configs=[config(name="retention.ms", value="1000", **operation)]) for i in range(n)]
    return api_key, 1, dict(resources=resources, validate_only=False)


def alter_configs(n: int) -> tuple[int, int, dict[str, Any]]:
    return _alter(33, n)


def incremental_alter_configs(n: int) -> tuple[int, int, dict[str, Any]]:
    return _alter(44, n, config_operation=0)  # SET


_ANY_ACL = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
                host_filter=None, operation=1, permission_type=1)  # ANY of everything


def describe_acls(n: int) -> tuple[int, int, dict[str, Any]]:
    return 29, 3, dict(_ANY_ACL)  # matches the n bindings of setup_acls


def delete_acls(n: int) -> tuple[int, int, dict[str, Any]]:
    return 31, 3, dict(filters=[_cls(31, "DeleteAclsFilter")(**_ANY_ACL)])  # one filter removing all n


def list_groups(n: int) -> tuple[int, int, dict[str, Any]]:
    return 16, 5, dict(states_filter=[], types_filter=[])  # lists the n groups of setup_groups


def consumer_group_describe(n: int) -> tuple[int, int, dict[str, Any]]:
    return 69, 1, dict(group_ids=[BIG_GROUP], include_authorized_operations=False)  # setup_big_group


def fetch(n: int) -> tuple[int, int, dict[str, Any]]:
    topic, part = _cls(1, "FetchTopic"), _cls(1, "FetchTopic", "FetchPartition")
    topics = [topic(topic=name, partitions=[part(partition=p, current_leader_epoch=-1, fetch_offset=0,
                                                 last_fetched_epoch=-1, log_start_offset=-1,
                                                 partition_max_bytes=1024) for p in ps]) for name, ps in _spread(n)]
    return 1, 12, dict(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=[], rack_id="")


def fetch_session(n: int) -> tuple[int, int, dict[str, Any]]:
    api_key, version, fields = fetch(n)
    return api_key, version, {**fields, "session_epoch": 0}  # a full fetch that opens a session of n partitions


BUILDERS: dict[str, Callable[[int], tuple[int, int, dict[str, Any]]]] = {
    f.__name__: f for f in (offset_commit, offset_fetch, list_offsets, delete_topics, create_topics,
                            describe_groups, delete_groups, describe_topic_partitions,
                            delete_records, offset_delete, txn_offset_commit, describe_configs, create_acls,
                            fetch, produce, alter_configs, incremental_alter_configs, describe_acls, delete_acls,
                            list_groups, consumer_group_describe, fetch_session)
}


def frame(name: str, entries: int, correlation_id: int = 1) -> bytes:
    api_key, version, fields = BUILDERS[name](entries)
    return codec.encode_request(codec.new_request(api_key, version, **fields), correlation_id, "big")


# -- the state some requests need: n bindings, n groups, a KIP-848 group over n partitions ----------------

BIG_GROUP, BIG_GROUP_MEMBERS = "bench-848", 4


def setup_acls(world: World, n: int) -> None:
    """n ALLOW READ bindings on topics ``acl-i``, and an authorizer that lets the benchmark's client in."""
    acls = [Acl(2, f"acl-{i}", 3, "User:bench", "*", 3, 3) for i in range(n)]
    world.authorizer = StandardAuthorizer(acls, super_users=["User:ANONYMOUS"])


def setup_groups(world: World, n: int) -> None:
    """n empty classic groups (each made as an OffsetCommit with generation -1 makes a simple group)."""
    service = service_of(world)
    for i in range(n):
        service.validate_offset_commit(f"listed-group-{i}", "", -1, None, 8)


def setup_offsets(world: World, n: int) -> None:
    """Group "bench" (a simple group, as an OffsetCommit with generation -1 makes it) with an offset committed to
    each of the n partitions OffsetDelete names, so its answer deletes them all."""
    service_of(world).validate_offset_commit("bench", "", -1, None, 8)
    value = CommittedOffset(0, -1, "", world.now_ms(), None)
    offsets_of(world).store.commit_all("bench", {(name, p): value for name, ps in _spread(n) for p in ps})


async def setup_big_group(address: tuple[str, int], n: int) -> None:
    """KIP-848 group ``bench-848``: four members subscribed to the big topics holding n partitions."""
    conn = await RawConnection.open(*address)
    names = [name for name, _ in _spread(n)]
    members = [str(uuid.uuid4()) for _ in range(BIG_GROUP_MEMBERS)]
    epochs = dict.fromkeys(members, 0)
    for correlation in range(3 * len(members)):  # join, then heartbeat until each has its share of the target
        member = members[correlation % len(members)]
        request = codec.new_request(68, 1, group_id=BIG_GROUP, member_id=member, member_epoch=epochs[member],
                                    rebalance_timeout_ms=30_000, subscribed_topic_names=names,
                                    topic_partitions=[] if epochs[member] == 0 else None)
        await conn.send_raw(codec.encode_request(request, correlation, "big"))
        hb = codec.decode_response(68, 1, await conn.read_frame(timeout=300))  # the assignor runs on the loop
        assert hb.error_code == 0, hb
        epochs[member] = hb.member_epoch
    await conn.close()


WorldSetup = Callable[[World, int], None]
WORLD_SETUPS: dict[str, WorldSetup] = {"describe_acls": setup_acls, "delete_acls": setup_acls,
                                       "list_groups": setup_groups, "offset_delete": setup_offsets}
WIRE_SETUPS: dict[str, Callable[[tuple[str, int], int], Awaitable[None]]] = {
    "consumer_group_describe": setup_big_group}
