"""The dispatch table, built from the handler modules' own declarations (STYLE.md principle 7).

Each module named in :data:`HANDLERS` declares ``API_KEY`` and ``handle``; an
optional ``VERSIONS = (min, max)`` narrows the codec's range for that API. The
ApiVersions response is derived from the same declarations.

A module is imported when its API is first used, not at start-up (issue 22: ready to accept a
JoinGroup in <= 100 ms): the table below says which API key each module serves, so the server can
advertise and route without importing fifty handlers and everything they use. The module's own
``API_KEY`` and ``VERSIONS`` stay the declarations: loading a module whose declarations disagree with
the table raises, and ``tests/unit/test_serve_imports.py`` checks every module against it.
"""

from __future__ import annotations

import importlib
from typing import Any

from rebalance_lab.coordinator.handlers import errors_response
from rebalance_lab.coordinator.handlers.base import Handler
from rebalance_lab.protocol.codec import codec_version_range

# module -> the API key its API_KEY declares
HANDLERS: dict[str, int] = {
    "api_versions": 18,
    "find_coordinator": 10,
    "offset_commit": 8, "offset_fetch": 9, "offset_delete": 47,
    "join_group": 11, "sync_group": 14, "heartbeat": 12, "leave_group": 13, "describe_groups": 15,
    "list_groups": 16, "delete_groups": 42,
    "metadata": 3,
    "produce": 0,
    "fetch": 1,
    "list_offsets": 2,
    "init_producer_id": 22,
    "add_partitions_to_txn": 24, "add_offsets_to_txn": 25, "end_txn": 26, "txn_offset_commit": 28,  # issue 18
    "describe_transactions": 65, "list_transactions": 66, "describe_producers": 61,
    "create_topics": 19,
    "delete_topics": 20,
    "create_partitions": 37,
    "consumer_group_heartbeat": 68, "consumer_group_describe": 69,
    "sasl_handshake": 17, "sasl_authenticate": 36,
    "describe_acls": 29, "create_acls": 30, "delete_acls": 31,
    "describe_configs": 32, "alter_configs": 33, "incremental_alter_configs": 44,  # the admin surface (issue 18)
    "delete_records": 21, "describe_cluster": 60, "describe_topic_partitions": 75,
    "elect_leaders": 43, "alter_partition_reassignments": 45, "list_partition_reassignments": 46,
    "offset_for_leader_epoch": 23,
    "describe_log_dirs": 35, "list_config_resources": 74,
    "describe_quorum": 55, "alter_replica_log_dirs": 34,  # issue 18: DescribeQuorum, AlterReplicaLogDirs
}
# module -> the VERSIONS it declares (the others serve the codec's whole range)
NARROWED: dict[str, tuple[int, int]] = {"offset_for_leader_epoch": (2, 4)}
HANDLER_MODULES: tuple[str, ...] = tuple(HANDLERS)


class HandlerSpec:
    """One served API: its key, versions and module; the module is imported on the first :attr:`handle`."""

    __slots__ = ("_handle", "api_key", "module", "versions")

    def __init__(self, api_key: int, versions: tuple[int, int], module: str) -> None:
        self.api_key = api_key
        self.versions = versions
        self.module = module
        self._handle: Handler | None = None

    @property
    def handle(self) -> Handler:
        handle = self._handle
        if handle is None:
            handle = self._handle = self.load()
        return handle

    def loaded(self) -> Handler:
        """:attr:`handle`, as a callable: the module is loaded once, whether a request or an error answer asks first."""
        return self.handle

    def load(self) -> Handler:
        """Import the module, check its declarations against the table, register its error answers."""
        module = importlib.import_module(f"{__name__}.{self.module}")
        declared = (int(module.API_KEY), _narrowed(module))
        expected = (self.api_key, NARROWED.get(self.module))
        if declared != expected:
            raise RuntimeError(f"handler {self.module} declares (API_KEY, VERSIONS) {declared}; the table in "
                               f"{__name__} says {expected}")
        builder = getattr(module, "error_response", None)
        if builder is not None:
            errors_response.register(self.api_key, builder)
        handle: Handler = module.handle
        return handle


def _narrowed(module: Any) -> tuple[int, int] | None:
    versions = getattr(module, "VERSIONS", None)
    return None if versions is None else (int(versions[0]), int(versions[1]))


def load_handlers(modules: tuple[str, ...] = HANDLER_MODULES) -> dict[int, HandlerSpec]:
    """The dispatch table; no module is imported until its API is used (errors_response loads one whose
    whole-request error answer is asked for first, e.g. by a fault)."""
    table: dict[int, HandlerSpec] = {}
    for name in modules:
        key = HANDLERS.get(name)
        if key is None:
            raise RuntimeError(f"handler {name} is not in the table of {__name__}")
        codec = codec_version_range(key)
        if codec is None:
            raise RuntimeError(f"handler {name} serves api key {key}, which the codec does not know")
        if key in table:
            raise RuntimeError(f"api key {key} is served by both {table[key].module} and {name}")
        spec = table[key] = HandlerSpec(key, NARROWED.get(name, codec), name)
        errors_response.register_loader(key, spec.loaded)
    return table
