"""AlterReplicaLogDirs (34), v1-2, as ``KafkaApis.handleAlterReplicaLogDirsRequest`` and
``ReplicaManager.alterReplicaLogDirs`` answer on Kafka 4.4.0 (and 3.9.2).

ALTER on the cluster, else every requested partition gets CLUSTER_AUTHORIZATION_FAILED. Each partition
(the last directory named for it wins, as the request becomes a map) is checked in the broker's order: a
topic name too long for a future log directory (over 255 characters) -> INVALID_TOPIC_EXCEPTION; a path that
is not exactly the broker's one log directory as DescribeLogDirs reports it (a trailing "/" or a relative path
is another directory, as measured) -> LOG_DIR_NOT_FOUND, even for unknown partitions; a partition this
broker does not hold -> NOT_LEADER_OR_FOLLOWER if the cluster knows it, else UNKNOWN_TOPIC_OR_PARTITION;
else NONE: the replica already lives in that directory, so nothing moves. The real broker groups the
answer through a hash map (its topic order is arbitrary); the emulator keeps the request's order.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.describe_log_dirs import DEFAULT_LOG_DIR
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 34
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.AlterReplicaLogDirTopicResult
_PARTITION = _TOPIC.AlterReplicaLogDirPartitionResult
_FUTURE_DIR_LIMIT = 255  # UnifiedLog.logFutureDirName: "<topic>-<partition>.<32 hex>-future"


def _wanted(request: Any) -> dict[tuple[str, int], str]:
    wanted: dict[tuple[str, int], str] = {}
    for directory in request.dirs:
        for topic in directory.topics:
            for index in topic.partitions:
                wanted.pop((topic.name, index), None)
                wanted[(topic.name, index)] = directory.path
    return wanted


def _error(ctx: RequestContext, topic: str, index: int, path: str) -> ErrorCode:
    if len(f"{topic}-{index}.{'0' * 32}-future") > _FUTURE_DIR_LIMIT:
        return ErrorCode.INVALID_TOPIC
    if path != (ctx.world.config.data_dir or DEFAULT_LOG_DIR):  # LogManager.isLogDirOnline: the exact string
        return ErrorCode.LOG_DIR_NOT_FOUND
    info = ctx.world.cluster.topics.get(topic)
    partition = None if info is None else next((p for p in info.partitions if p.partition == index), None)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NONE if ctx.broker.node_id in partition.replicas else ErrorCode.NOT_LEADER_FOR_PARTITION


def _grouped(errors: dict[tuple[str, int], int]) -> list[Any]:
    topics: dict[str, list[Any]] = {}
    for (topic, index), code in errors.items():
        topics.setdefault(topic, []).append(_PARTITION(partition_index=index, error_code=code))
    return [_TOPIC(topic_name=name, partitions=partitions) for name, partitions in topics.items()]


def handle(ctx: RequestContext, request: Any) -> Any:
    wanted = _wanted(request)
    if not authz.permits_cluster(ctx, authz.ALTER):
        errors = {key: int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for key in wanted}
    else:
        errors = {key: int(_error(ctx, key[0], key[1], path)) for key, path in wanted.items()}
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=_grouped(errors))


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    errors = {key: int(code) for key in _wanted(request)}
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, results=_grouped(errors))
