"""The canonical rebalance event (``rbl-event/1``, spec/replay-inputs.md §7.1) in memory, JSONL and Arrow.

Every source adapter yields these and the replay reads nothing else. In memory an
event is a plain ``dict`` keyed by column name; absent keys mean null. The one
conversion is ``ts``: **an int of microseconds since the epoch, UTC** in memory
and in Arrow/Parquet (``timestamp[us, UTC]``), an ISO-8601 string in JSON Lines
(what the emulator's ``--record`` writes, docs/event-schema.md). Keeping the
time as an int keeps the per-group code fast and free of time-zone objects.

Parquet and JSONL carry the same columns, in the order of :data:`COLUMNS`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any

import pyarrow as pa

SCHEMA_VERSION = "rbl-event/1"
SCHEMA_MAJOR = "rbl-event/"

SOURCES = ("emulator", "broker_log", "client_log", "offsets_dumplog", "offsets_console")

EVENT_TYPES = frozenset({
    # classic, broker side
    "REBALANCE_PREPARE", "MEMBER_JOIN_REQUEST", "MEMBER_JOINED", "STATIC_MEMBER_REPLACED", "STATIC_MEMBER_REJOINED",
    "MEMBER_LEFT", "MEMBER_SESSION_EXPIRED", "PENDING_MEMBER_EXPIRED", "MEMBERS_DROPPED_NOT_REJOINED",
    "JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT", "GROUP_EMPTY", "GENERATION_SNAPSHOT", "GROUP_LOADED",
    "GROUP_UNLOADED", "GROUP_DEAD",
    # classic, client side
    "CLIENT_JOIN_START", "CLIENT_JOINED", "CLIENT_SYNCED", "CLIENT_PARTITIONS_REVOKED",
    "CLIENT_PARTITIONS_ASSIGNED", "CLIENT_PARTITIONS_LOST", "CLIENT_LEADER_ASSIGNMENT", "CLIENT_POLL_TIMEOUT",
    # KIP-848
    "K848_EPOCH_BUMP", "K848_TARGET_COMPUTED", "K848_MEMBER_STATE", "K848_MEMBER_FENCED", "K848_MEMBER_LEFT",
    # shared, and the emulator's own
    "TOPIC_METADATA", "FAULT_INJECTED", "FAULT_FIRED",
    # the emulator's explanations (issue 19): a refused join, a heartbeat told of a rebalance, a delay extended
    "MEMBER_JOIN_REFUSED", "MEMBER_REBALANCE_NOTIFIED", "REBALANCE_DELAY_EXTENDED",
})

TP = pa.struct([("topic", pa.string()), ("partition", pa.int32())])
TP_LIST = pa.list_(TP)
SUBSCRIPTION = pa.struct([
    ("topics", pa.list_(pa.string())), ("owned", TP_LIST), ("generation", pa.int32()), ("rack", pa.string()),
])
MEMBER = pa.struct([
    ("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
    ("client_host", pa.string()), ("rack_id", pa.string()), ("session_timeout_ms", pa.int32()),
    ("rebalance_timeout_ms", pa.int32()), ("topics", pa.list_(pa.string())), ("owned", TP_LIST),
    ("generation", pa.int32()), ("assignment", TP_LIST),
])
TS = pa.timestamp("us", tz="UTC")

#: Every column, in storage order, with its Arrow type. ``detail`` is a JSON text (faults' parameters).
COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("schema_version", pa.string()),
    ("source", pa.string()),
    ("source_ref", pa.string()),
    ("seq", pa.int64()),
    ("ts", TS),
    ("ts_kind", pa.string()),
    ("cluster_id", pa.string()),
    ("broker_id", pa.int32()),
    ("coord_partition", pa.int32()),
    ("group_id", pa.string()),
    ("group_kind", pa.string()),
    ("protocol_type", pa.string()),
    ("event_type", pa.string()),
    ("generation", pa.int32()),
    ("prev_generation", pa.int32()),
    ("member_id", pa.string()),
    ("group_instance_id", pa.string()),
    ("client_id", pa.string()),
    ("client_host", pa.string()),
    ("rack_id", pa.string()),
    ("leader_id", pa.string()),
    ("protocol", pa.string()),
    ("supported_protocols", pa.list_(pa.string())),
    ("reason_raw", pa.string()),
    ("reason_code", pa.string()),
    ("client_reason", pa.string()),
    ("n_members", pa.int32()),
    ("n_static", pa.int32()),
    ("session_timeout_ms", pa.int32()),
    ("rebalance_timeout_ms", pa.int32()),
    ("subscription", SUBSCRIPTION),
    ("members", pa.list_(MEMBER)),
    ("partitions", TP_LIST),
    ("partitions_pending_revocation", TP_LIST),
    ("topic_partitions", pa.map_(pa.string(), pa.int32())),
    ("fault", pa.string()),
    ("detail", pa.string()),
    ("raw", pa.string()),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
_KNOWN = frozenset(COLUMN_NAMES)
ARROW_SCHEMA = pa.schema([pa.field(name, dtype) for name, dtype in COLUMNS])


class EventError(ValueError):
    """A row that is not a canonical event; the message says which column and why."""


# --- time -------------------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ts_from_iso(text: str) -> int:
    """ISO-8601 (with an offset, or naive = UTC) to epoch microseconds."""
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError) as exc:
        raise EventError(f"ts {text!r} is not an ISO-8601 time") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def ts_to_iso(ts_us: int) -> str:
    """Epoch microseconds to ISO-8601 UTC; milliseconds unless the value has sub-millisecond digits."""
    moment = datetime.fromtimestamp(ts_us // 1_000_000, tz=UTC).replace(microsecond=ts_us % 1_000_000)
    return moment.isoformat(timespec="milliseconds" if ts_us % 1000 == 0 else "microseconds")


def ts_from_ms(ms: int) -> int:
    return ms * 1000


# --- partitions -----------------------------------------------------------------------------------------------------

def tp(topic: str, partition: int) -> dict[str, Any]:
    return {"topic": topic, "partition": partition}


def tp_key(value: dict[str, Any]) -> tuple[str, int]:
    return value["topic"], value["partition"]


def parse_tp(text: str) -> dict[str, Any]:
    """``TopicPartition.toString`` (``topic-partition``) back to a tp; split on the *last* ``-`` (§3.1)."""
    topic, sep, number = text.strip().rpartition("-")
    if not sep or not topic or not number.lstrip("-").isdigit():
        raise EventError(f"{text!r} is not a topic-partition")
    return tp(topic, int(number))


# --- validation -----------------------------------------------------------------------------------------------------

def check(event: dict[str, Any]) -> dict[str, Any]:
    """Raise :class:`EventError` unless ``event`` is an in-memory canonical event; return it unchanged."""
    version = event.get("schema_version")
    if not isinstance(version, str) or not version.startswith(SCHEMA_MAJOR):
        raise EventError(f"schema_version {version!r} is not {SCHEMA_VERSION}")
    if version != SCHEMA_VERSION:
        raise EventError(f"schema_version {version!r} is a major version this reader does not know")
    if event.get("event_type") not in EVENT_TYPES:
        raise EventError(f"unknown event_type {event.get('event_type')!r}")
    if not isinstance(event.get("ts"), int):
        raise EventError("ts is missing or not epoch microseconds")
    unknown = event.keys() - _KNOWN
    if unknown:
        raise EventError(f"unknown column(s) {sorted(unknown)}")
    return event


# --- JSON Lines -----------------------------------------------------------------------------------------------------

def from_json(line: str) -> dict[str, Any]:
    """One JSONL row (a recording's line) to an in-memory event; raises :class:`EventError`."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EventError(f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(row, dict):
        raise EventError("a JSON value that is not an object")
    ts = row.get("ts")
    if isinstance(ts, str):
        row["ts"] = ts_from_iso(ts)
    elif not isinstance(ts, int):
        raise EventError("ts is missing")
    detail = row.get("detail")
    if detail is not None and not isinstance(detail, str):
        row["detail"] = json.dumps(detail, sort_keys=True, separators=(",", ":"))
    return check(row)


def to_json(event: dict[str, Any]) -> str:
    """An in-memory event to one JSONL row (without the newline); nulls are left out."""
    row = {name: event[name] for name in COLUMN_NAMES if event.get(name) is not None}
    row["ts"] = ts_to_iso(event["ts"])
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def write_jsonl(events: Iterable[dict[str, Any]], out: IO[str]) -> int:
    count = 0
    for event in events:
        out.write(to_json(event))
        out.write("\n")
        count += 1
    return count


# --- Arrow / Parquet ------------------------------------------------------------------------------------------------

def to_arrow(events: Iterable[dict[str, Any]]) -> pa.Table:
    """Events to a table with exactly :data:`ARROW_SCHEMA` (missing keys become nulls)."""
    return table_from_rows(events, ARROW_SCHEMA)


def table_from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Row dicts to a table of ``schema``: absent keys are nulls, keys outside it are ignored, and a map
    column may be given as a dict. Arrow's converter reads the dicts itself, as one struct array
    (cheaper than ``Table.from_pylist``, which gathers every column in Python first)."""
    values = rows if isinstance(rows, list) else list(rows)
    return pa.Table.from_struct_array(pa.array(values, pa.struct(list(schema))))


def python_columns(table: pa.Table) -> dict[str, list[Any]]:
    """Each column of ``table`` as a Python list: timestamps as int epoch microseconds, maps as dicts."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        values = column.to_pylist()
        if pa.types.is_map(column.type):
            values = [dict(v) if v is not None else None for v in values]
        columns[name] = values
    return columns


def from_arrow(table: pa.Table) -> list[dict[str, Any]]:
    """A table with the canonical columns back to in-memory events (``ts`` as int µs, nulls dropped)."""
    columns = python_columns(table)
    names = list(columns)
    return [
        {name: value for name, value in zip(names, values, strict=True) if value is not None}
        for values in zip(*(columns[name] for name in names), strict=True)
    ]


def iter_jsonl(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Strict reader for trusted canonical JSONL (our own outputs); adapters use the tolerant one."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield from_json(line)
            except EventError as exc:
                raise EventError(f"line {number}: {exc}") from exc
