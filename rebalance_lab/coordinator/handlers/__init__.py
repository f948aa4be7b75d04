"""The dispatch table, built from the handler modules' own declarations (STYLE.md principle 7).

Each module in :data:`HANDLER_MODULES` declares ``API_KEY`` and ``handle``; an
optional ``VERSIONS = (min, max)`` narrows the codec's range for that API. The
ApiVersions response is derived from the same declarations.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from rebalance_lab.coordinator.handlers import errors_response
from rebalance_lab.coordinator.handlers.base import Handler
from rebalance_lab.protocol.codec import codec_version_range

HANDLER_MODULES: tuple[str, ...] = (
    "api_versions",
    "find_coordinator",
    "offset_commit", "offset_fetch", "offset_delete",
    "join_group", "sync_group", "heartbeat", "leave_group", "describe_groups", "list_groups", "delete_groups",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "init_producer_id",
    "add_partitions_to_txn", "add_offsets_to_txn", "end_txn", "txn_offset_commit",  # transactions (issue 18)
    "describe_transactions", "list_transactions", "describe_producers",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "consumer_group_heartbeat", "consumer_group_describe",
    "sasl_handshake", "sasl_authenticate",
    "describe_acls", "create_acls", "delete_acls",
    "describe_configs", "alter_configs", "incremental_alter_configs",  # the admin surface (issue 18)
    "delete_records", "describe_cluster", "describe_topic_partitions",
    "elect_leaders", "alter_partition_reassignments", "list_partition_reassignments", "offset_for_leader_epoch",
    "describe_log_dirs", "list_config_resources",
    "describe_quorum", "alter_replica_log_dirs",  # issue 18: DescribeQuorum, AlterReplicaLogDirs
)


@dataclass(frozen=True)
class HandlerSpec:
    api_key: int
    versions: tuple[int, int]
    handle: Handler
    module: str


def load_handlers(modules: tuple[str, ...] = HANDLER_MODULES) -> dict[int, HandlerSpec]:
    table: dict[int, HandlerSpec] = {}
    for name in modules:
        module = importlib.import_module(f"{__name__}.{name}")
        key = int(module.API_KEY)
        codec = codec_version_range(key)
        if codec is None:
            raise RuntimeError(f"handler {name} serves api key {key}, which the codec does not know")
        versions = tuple(getattr(module, "VERSIONS", codec))
        if key in table:
            raise RuntimeError(f"api key {key} is served by both {table[key].module} and {name}")
        table[key] = HandlerSpec(key, (int(versions[0]), int(versions[1])), module.handle, name)
        builder = getattr(module, "error_response", None)
        if builder is not None:
            errors_response.register(key, builder)
    return table
