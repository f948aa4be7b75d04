"""ListPartitionReassignments (46), v0: the reassignments in progress, as Kafka 4.4.0 answers.

DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED. A reassignment on the emulated brokers
completes when it is made (replication is instant), so none is ever in progress and the answer lists
no topic, for named topics (known or not) as for all, as a real broker answers once its
reassignments are done.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 46


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits_cluster(ctx, authz.DESCRIBE):
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                                  error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                  error_message="Cluster authorization failed.", topics=[])
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              error_message=None, topics=[])


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, error_code=code, error_message=None,
                              topics=[])
