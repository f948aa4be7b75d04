"""DescribeQuorum (55), v0-2: the KRaft metadata quorum, as a Kafka 4.4.0 / 3.9.2 broker answers it.

A broker forwards the request to the active controller (``ControllerApis.handleDescribeQuorumRequest``:
DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top with Kafka's message), whose
``KafkaRaftClient`` describes ``__cluster_metadata``-0 only; any other request has every partition it names
answered UNKNOWN_TOPIC_OR_PARTITION ("This server does not host this topic-partition.", leader 0, epoch 0, no
nodes), as measured on both brokers. The emulator's quorum is the one DescribeCluster and Metadata
present: a single voter, the controller (the lowest live broker), leader at epoch 1, with the other live
brokers as observers. Its high watermark is a stand-in (one record per broker, topic and partition the
controller would have written); timestamps are the emulator's clock, as the leader reports its own time.
v2 ``nodes`` names the voter's CONTROLLER listener: the emulator has none apart, so it is the broker's address.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.additional import advertised

API_KEY = 55
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.TopicData
_PARTITION = _TOPIC.PartitionData
_REPLICA = _PARTITION.ReplicaState
_NODE = _RESPONSE.Node
_LISTENER = _NODE.Listener
METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
_NOT_HOSTED = "This server does not host this topic-partition."
_DENIED = "Cluster authorization failed."


def _live(ctx: RequestContext) -> list[int]:
    cluster = ctx.world.cluster
    return [n for n in sorted(cluster.brokers) if ctx.world.nodes[n].up and n not in cluster.fenced]


def _high_watermark(ctx: RequestContext) -> int:
    cluster = ctx.world.cluster
    return len(cluster.brokers) + sum(1 + len(t.partitions) for t in cluster.topics.values())


def _replica(node: int, end: int, now: int) -> Any:
    return _REPLICA(replica_id=node, replica_directory_id=None, log_end_offset=end, last_fetch_timestamp=now,
                    last_caught_up_timestamp=now)


def _described(ctx: RequestContext, index: int, live: list[int]) -> Any:
    now, end = ctx.world.now_ms(), _high_watermark(ctx)
    leader = live[0]
    return _PARTITION(partition_index=index, error_code=ErrorCode.NONE, error_message="", leader_id=leader,
                      leader_epoch=LEADER_EPOCH, high_watermark=end, current_voters=[_replica(leader, end, now)],
                      observers=[_replica(n, end, now) for n in live[1:]])


def _node(ctx: RequestContext, node_id: int) -> Any:
    shown = advertised(ctx.world.services, ctx.listener, ctx.world.cluster.brokers[node_id])
    return _NODE(node_id=node_id, listeners=[_LISTENER(name="CONTROLLER", host=shown.host, port=shown.port)])


def _answer(ctx: RequestContext, topics: list[Any], nodes: list[Any], code: int = ErrorCode.NONE,
            message: str = "") -> Any:
    return codec.new_response(API_KEY, ctx.api_version, error_code=code, error_message=message, topics=topics,
                              nodes=nodes)


def _refused(topic: Any) -> Any:
    partitions = [_PARTITION(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             error_message=_NOT_HOSTED, leader_id=0, leader_epoch=0, high_watermark=0,
                             current_voters=[], observers=[]) for p in topic.partitions]
    return _TOPIC(topic_name=topic.topic_name, partitions=partitions)


def _is_metadata_partition(topics: list[Any]) -> bool:
    """KafkaRaftClient answers exactly one topic with one partition, __cluster_metadata-0; else it refuses all."""
    return len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and \
        [p.partition_index for p in topics[0].partitions] == [0]


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits_cluster(ctx, authz.DESCRIBE):
        return _answer(ctx, [], [], ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _DENIED)
    live = _live(ctx)
    if not (live and _is_metadata_partition(request.topics)):
        return _answer(ctx, [_refused(t) for t in request.topics], [])
    described = _TOPIC(topic_name=METADATA_TOPIC, partitions=[_described(ctx, 0, live)])
    return _answer(ctx, [described], [_node(ctx, live[0])])


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return codec.new_response(API_KEY, api_version, error_code=code, error_message=None, topics=[], nodes=[])
