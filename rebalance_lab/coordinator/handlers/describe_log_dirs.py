"""DescribeLogDirs (35), v1-5: the broker's one log directory and the size of each partition in it, as
``ReplicaManager.describeLogDirs`` answers on Kafka 4.4.0.

DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+ at the top, with no results). Topics null:
every partition this broker holds; named topics and partitions it does not hold are left out. A partition's
size is the bytes of its stored batches (the same bytes a broker's segments hold for them; a DeleteRecords
keeps them, as a broker keeps whole segments), its offset lag 0 (no future replica). The directory is
``--data-dir`` or a broker's default ``/tmp/kraft-combined-logs``; v4+ total and usable bytes are its file
system's (the emulator keeps the logs in memory, so they are a stand-in), v5 ``is_cordoned`` false.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rebalance_lab.coordinator.dataplane import dataplane
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 35
_RESPONSE = codec.response_type(API_KEY)
_RESULT = _RESPONSE.DescribeLogDirsResult
_TOPIC = _RESULT.DescribeLogDirsTopic
_PARTITION = _TOPIC.DescribeLogDirsPartition
DEFAULT_LOG_DIR = "/tmp/kraft-combined-logs"


def _size(ctx: RequestContext, topic_id: Any, index: int) -> int:
    log = dataplane(ctx.world).logs.existing(topic_id, index)
    return 0 if log is None else sum(len(b.data) for b in log.batches)


def _topics(ctx: RequestContext, request: Any) -> list[Any]:
    cluster, node = ctx.world.cluster, ctx.broker.node_id
    wanted = {t.name: set(range(len(t.partitions))) for t in cluster.topics.values()} if request.topics is None \
        else {t.topic: set(t.partitions) for t in request.topics}
    found = []
    for name, indexes in wanted.items():
        info = cluster.topics.get(name)
        if info is None:
            continue
        partitions = [_PARTITION(partition_index=p.partition, partition_size=_size(ctx, info.topic_id, p.partition),
                                 offset_lag=0, is_future_key=False)
                      for p in info.partitions if node in p.replicas and p.partition in indexes]
        if partitions:
            found.append(_TOPIC(name=name, partitions=partitions))
    return found


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits_cluster(ctx, authz.DESCRIBE):
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    directory = ctx.world.config.data_dir or DEFAULT_LOG_DIR
    existing = next((p for p in [Path(directory), *Path(directory).parents] if p.exists()), Path("/"))
    usage = shutil.disk_usage(existing)
    result = _RESULT(error_code=ErrorCode.NONE, log_dir=directory, topics=_topics(ctx, request),
                     total_bytes=usage.total, usable_bytes=usage.free, is_cordoned=False)
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              results=[result])


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code, results=[])
