"""The replay's column types without Arrow: the one definition of every table's and the events' columns.

Importing pyarrow costs 0.8-2.5 s (it pulls in numpy and pandas), more than a demo-sized replay
takes in the single-process engine (issue 20 item 3). The columns are therefore described here in
four plain types; :mod:`rebalance_lab.replay.events` and :mod:`rebalance_lab.replay.tables` turn
them into Arrow schemas for Spark and pyarrow, and :mod:`rebalance_lab.replay.parquet_plain` writes
small tables from them with no Arrow at all. Every field is nullable, as in Arrow's defaults, except
a map's keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PrimKind = Literal["string", "int32", "int64", "float64", "bool", "timestamp_us_utc"]


@dataclass(frozen=True)
class Prim:
    kind: PrimKind


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, ColumnType], ...]


@dataclass(frozen=True)
class ListOf:
    item: ColumnType


@dataclass(frozen=True)
class MapOf:
    key: Prim
    value: ColumnType


ColumnType = Prim | Struct | ListOf | MapOf
Columns = tuple[tuple[str, ColumnType], ...]

STRING = Prim("string")
INT32 = Prim("int32")
INT64 = Prim("int64")
FLOAT64 = Prim("float64")
BOOL = Prim("bool")
TS = Prim("timestamp_us_utc")  # epoch microseconds in memory, timestamp[us, UTC] in Arrow and Parquet

TP = Struct((("topic", STRING), ("partition", INT32)))
TP_LIST = ListOf(TP)
STRINGS = ListOf(STRING)
SUBSCRIPTION = Struct((("topics", STRINGS), ("owned", TP_LIST), ("generation", INT32), ("rack", STRING)))
MEMBER = Struct((
    ("member_id", STRING), ("group_instance_id", STRING), ("client_id", STRING), ("client_host", STRING),
    ("rack_id", STRING), ("session_timeout_ms", INT32), ("rebalance_timeout_ms", INT32), ("topics", STRINGS),
    ("owned", TP_LIST), ("generation", INT32), ("assignment", TP_LIST),
))
MEMBER_ASSIGNMENT = Struct((("member_id", STRING), ("partitions", TP_LIST)))

#: The canonical event's columns, in storage order (``detail`` is a JSON text: faults' parameters).
EVENT_COLUMNS: Columns = (
    ("schema_version", STRING), ("source", STRING), ("source_ref", STRING), ("seq", INT64), ("ts", TS),
    ("ts_kind", STRING), ("cluster_id", STRING), ("broker_id", INT32), ("coord_partition", INT32),
    ("group_id", STRING), ("group_kind", STRING), ("protocol_type", STRING), ("event_type", STRING),
    ("generation", INT32), ("prev_generation", INT32), ("member_id", STRING), ("group_instance_id", STRING),
    ("client_id", STRING), ("client_host", STRING), ("rack_id", STRING), ("leader_id", STRING),
    ("protocol", STRING), ("supported_protocols", STRINGS), ("reason_raw", STRING), ("reason_code", STRING),
    ("client_reason", STRING), ("n_members", INT32), ("n_static", INT32), ("session_timeout_ms", INT32),
    ("rebalance_timeout_ms", INT32), ("subscription", SUBSCRIPTION), ("members", ListOf(MEMBER)),
    ("partitions", TP_LIST), ("partitions_pending_revocation", TP_LIST), ("topic_partitions", MapOf(STRING, INT32)),
    ("fault", STRING), ("detail", STRING), ("raw", STRING),
)

_KEY: Columns = (("cluster_id", STRING), ("group_id", STRING))

GROUP_GENERATIONS: Columns = (
    *_KEY, ("generation", INT32), ("group_kind", STRING), ("episode_id", INT32), ("t_prepare", TS),
    ("t_join_done", TS), ("t_sync_done", TS), ("leader_id", STRING), ("protocol_type", STRING), ("protocol", STRING),
    ("n_members", INT32), ("n_static", INT32),
    ("members", ListOf(MEMBER)),  # with each member's assignment, when a snapshot was seen
    ("trigger_codes", STRINGS),
    ("completed", BOOL),  # False: the generation never synced (interrupted, merged into the next episode)
    ("has_log", BOOL), ("has_snapshot", BOOL), ("sources", STRINGS),
)

REBALANCE_EPISODES: Columns = (
    *_KEY, ("episode_id", INT32), ("first_gen", INT32), ("last_gen", INT32), ("n_generations", INT32),
    ("t_start", TS), ("t_end", TS), ("join_ms", FLOAT64), ("sync_ms", FLOAT64), ("total_ms", FLOAT64),
    ("trigger_code", STRING), ("trigger_member", STRING), ("members_before", INT32), ("members_after", INT32),
    ("members_in", STRINGS), ("members_out", STRINGS), ("protocol", STRING), ("partitions_total", INT32),
    ("partitions_moved", INT32), ("partitions_revoked", INT32), ("unowned_partition_ms", FLOAT64),
    ("max_load", INT32), ("min_load", INT32), ("load_cv", FLOAT64),
    ("storm_id", INT32),  # null when the episode is not part of a storm
)

PARTITION_MOVES: Columns = (
    *_KEY, ("generation", INT32), ("topic", STRING), ("partition", INT32), ("owner_before", STRING),
    ("owner_after", STRING), ("moved", BOOL), ("revoked_at", TS), ("assigned_at", TS), ("gap_ms", FLOAT64),
)

WHATIF_RESULTS: Columns = (
    *_KEY, ("episode_id", INT32), ("generation", INT32), ("assignor", STRING),
    ("mode", STRING),  # "eager" | "cooperative" (and "+static" when static membership is simulated)
    ("whatif", STRING),  # the what-if as asked (--what-if): "static" runs the recorded assignor, named so
    ("partitions_moved", INT32), ("revocations", INT32), ("follow_up_generations", INT32), ("max_load", INT32),
    ("min_load", INT32), ("imbalance", INT32), ("est_stw_ms", FLOAT64), ("est_unowned_partition_ms", FLOAT64),
    ("actual_partitions_moved", INT32), ("actual_revocations", INT32), ("actual_imbalance", INT32),
    ("delta_moved", INT32), ("delta_imbalance", INT32),
    ("reproduced", BOOL),  # the what-if assignment equals the recorded one
    ("assignment", ListOf(MEMBER_ASSIGNMENT)),  # final assignment (after the follow-up round if cooperative)
    ("unknown_reason", STRING),  # why the episode's what-if could not run (null when it ran; replay/counts.py)
)

GROUP_SUMMARY: Columns = (
    *_KEY, ("group_kind", STRING), ("first_ts", TS), ("last_ts", TS), ("events", INT64), ("generations", INT32),
    ("episodes", INT32), ("triggers", MapOf(STRING, INT32)), ("join_ms_p50", FLOAT64), ("join_ms_p95", FLOAT64),
    ("join_ms_p99", FLOAT64), ("total_ms_p50", FLOAT64), ("total_ms_p95", FLOAT64), ("total_ms_p99", FLOAT64),
    ("storms", INT32), ("members_joined", INT32), ("members_left", INT32),
    ("static_rejoins_without_rebalance", INT32), ("static_rejoin_rebalances", INT32),
    ("coordinator_moves", INT32), ("partitions_moved", INT32),
)

#: The derived tables (spec/replay-inputs.md §7.2), in the order the runners write them.
TABLE_COLUMNS: dict[str, Columns] = {
    "group_generations": GROUP_GENERATIONS,
    "rebalance_episodes": REBALANCE_EPISODES,
    "partition_moves": PARTITION_MOVES,
    "whatif_results": WHATIF_RESULTS,
    "group_summary": GROUP_SUMMARY,
}
