"""The derived tables of a replay (spec/replay-inputs.md §7.2): names, columns and Arrow types.

The per-group replay (:mod:`rebalance_lab.replay.model`) returns rows as dicts
keyed by these column names (``partition_moves`` as a :class:`~.rows.TupleRows`, which reads
as such dicts); times are epoch microseconds (``ts`` columns) and
durations are float milliseconds (``*_ms``). Both the Spark pipeline and the
single-process runner write each table as Parquet with exactly these schemas,
so their outputs compare row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rebalance_lab.replay.events import MEMBER, TP_LIST, TS, python_columns, table_from_rows
from rebalance_lab.replay.rows import TupleRows as TupleRows  # re-exported: the tasks gather rows by kind

_KEY = [("cluster_id", pa.string()), ("group_id", pa.string())]
MEMBER_ASSIGNMENT = pa.struct([("member_id", pa.string()), ("partitions", TP_LIST)])

GROUP_GENERATIONS = pa.schema([*_KEY,
    ("generation", pa.int32()),
    ("group_kind", pa.string()),
    ("episode_id", pa.int32()),
    ("t_prepare", TS),
    ("t_join_done", TS),
    ("t_sync_done", TS),
    ("leader_id", pa.string()),
    ("protocol_type", pa.string()),
    ("protocol", pa.string()),
    ("n_members", pa.int32()),
    ("n_static", pa.int32()),
    ("members", pa.list_(MEMBER)),  # with each member's assignment, when a snapshot was seen
    ("trigger_codes", pa.list_(pa.string())),
    ("completed", pa.bool_()),  # False: the generation never synced (interrupted, merged into the next episode)
    ("has_log", pa.bool_()),
    ("has_snapshot", pa.bool_()),
    ("sources", pa.list_(pa.string())),
])

REBALANCE_EPISODES = pa.schema([*_KEY,
    ("episode_id", pa.int32()),
    ("first_gen", pa.int32()),
    ("last_gen", pa.int32()),
    ("n_generations", pa.int32()),
    ("t_start", TS),
    ("t_end", TS),
    ("join_ms", pa.float64()),
    ("sync_ms", pa.float64()),
    ("total_ms", pa.float64()),
    ("trigger_code", pa.string()),
    ("trigger_member", pa.string()),
    ("members_before", pa.int32()),
    ("members_after", pa.int32()),
    ("members_in", pa.list_(pa.string())),
    ("members_out", pa.list_(pa.string())),
    ("protocol", pa.string()),
    ("partitions_total", pa.int32()),
    ("partitions_moved", pa.int32()),
    ("partitions_revoked", pa.int32()),
    ("unowned_partition_ms", pa.float64()),
    ("max_load", pa.int32()),
    ("min_load", pa.int32()),
    ("load_cv", pa.float64()),
    ("storm_id", pa.int32()),  # null when the episode is not part of a storm
])

PARTITION_MOVES = pa.schema([*_KEY,
    ("generation", pa.int32()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("owner_before", pa.string()),
    ("owner_after", pa.string()),
    ("moved", pa.bool_()),
    ("revoked_at", TS),
    ("assigned_at", TS),
    ("gap_ms", pa.float64()),
])

WHATIF_RESULTS = pa.schema([*_KEY,
    ("episode_id", pa.int32()),
    ("generation", pa.int32()),
    ("assignor", pa.string()),
    ("mode", pa.string()),  # "eager" | "cooperative" (and "+static" when static membership is simulated)
    ("whatif", pa.string()),  # the what-if as asked (--what-if): "static" runs the recorded assignor, named so
    ("partitions_moved", pa.int32()),
    ("revocations", pa.int32()),
    ("follow_up_generations", pa.int32()),
    ("max_load", pa.int32()),
    ("min_load", pa.int32()),
    ("imbalance", pa.int32()),
    ("est_stw_ms", pa.float64()),
    ("est_unowned_partition_ms", pa.float64()),
    ("actual_partitions_moved", pa.int32()),
    ("actual_revocations", pa.int32()),
    ("actual_imbalance", pa.int32()),
    ("delta_moved", pa.int32()),
    ("delta_imbalance", pa.int32()),
    ("reproduced", pa.bool_()),  # the what-if assignment equals the recorded one
    ("assignment", pa.list_(MEMBER_ASSIGNMENT)),  # final assignment (after the follow-up round if cooperative)
])

GROUP_SUMMARY = pa.schema([*_KEY,
    ("group_kind", pa.string()),
    ("first_ts", TS),
    ("last_ts", TS),
    ("events", pa.int64()),
    ("generations", pa.int32()),
    ("episodes", pa.int32()),
    ("triggers", pa.map_(pa.string(), pa.int32())),
    ("join_ms_p50", pa.float64()),
    ("join_ms_p95", pa.float64()),
    ("join_ms_p99", pa.float64()),
    ("total_ms_p50", pa.float64()),
    ("total_ms_p95", pa.float64()),
    ("total_ms_p99", pa.float64()),
    ("storms", pa.int32()),
    ("members_joined", pa.int32()),
    ("members_left", pa.int32()),
    ("static_rejoins_without_rebalance", pa.int32()),
    ("static_rejoin_rebalances", pa.int32()),
    ("coordinator_moves", pa.int32()),
    ("partitions_moved", pa.int32()),
])

TABLES: dict[str, pa.Schema] = {
    "group_generations": GROUP_GENERATIONS,
    "rebalance_episodes": REBALANCE_EPISODES,
    "partition_moves": PARTITION_MOVES,
    "whatif_results": WHATIF_RESULTS,
    "group_summary": GROUP_SUMMARY,
}


def to_arrow(name: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows of table ``name`` to Arrow with its exact schema (map columns may be given as dicts)."""
    schema = TABLES[name]
    if isinstance(rows, TupleRows):
        if rows.columns != tuple(schema.names):
            raise ValueError(f"{name}: columns {rows.columns} are not {schema.names}")
        return pa.Table.from_struct_array(pa.array(rows.tuples, pa.struct(list(schema))))
    return table_from_rows(rows, schema)


def from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """A table back to row dicts (timestamps as epoch microseconds, maps as dicts)."""
    columns = python_columns(table)
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*(columns[n] for n in names), strict=True)]
