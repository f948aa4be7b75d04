"""The canonical rebalance event (``rbl-event/1``) as plain rows: names, validation, time, JSON Lines.

No pyarrow here: the source adapters and the replay's first look at its input (preflight) import only this, so
input with nothing to replay is refused before Arrow, numpy or pandas load. :mod:`rebalance_lab.replay.events`
adds the Arrow types and re-exports every name of this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any

from rebalance_lab.replay.column_types import EVENT_COLUMNS
from rebalance_lab.replay.value_check import ValueCheckError, check_columns

SCHEMA_VERSION = "rbl-event/1"
_LAST_INT32 = 2**31 - 1  # the largest partition id and generation
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

#: Every column, in storage order (``events.COLUMNS`` gives each its Arrow type).
COLUMN_NAMES = tuple(name for name, _type in EVENT_COLUMNS)  # their one definition: column_types
_KNOWN = frozenset(COLUMN_NAMES)


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
    return _usable_ts((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, text)


# A day from datetime's limits (years 1 and 9999): a time written back (ts_to_iso, a report's local time) cannot
# overflow; a recording's line beyond them is damaged.
TS_MIN_US = -62_104_060_800_000_000  # 0002-01-01T00:00:00Z (observe/export.py bounds epoch ms by these too)
TS_MAX_US = 253_370_764_800_000_000  # 9999-01-01T00:00:00Z


def _usable_ts(ts_us: int, given: object) -> int:
    if not TS_MIN_US <= ts_us < TS_MAX_US:
        raise EventError(f"ts {given!r:.60} is outside the years 2 to 9998")
    return ts_us


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
    # An int32 partition id (at most 10 ASCII digits): a longer one made the what-if build a topic of that many
    # partitions (it ran for ever), and int() refuses more than 4,300 digits or a digit such as "²".
    if not sep or not topic or not (number.isascii() and number.isdigit() and len(number) <= 10) \
            or int(number) > _LAST_INT32:
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
    event_type = event.get("event_type")
    if not isinstance(event_type, str) or event_type not in EVENT_TYPES:  # (a list or an object is unhashable)
        raise EventError(f"unknown event_type {event_type!r:.80}")
    if not isinstance(event.get("ts"), int):
        raise EventError("ts is missing or not epoch microseconds")
    unknown = event.keys() - _KNOWN
    if unknown:
        raise EventError(f"unknown column(s) {sorted(unknown)}")
    return event


# --- JSON Lines -----------------------------------------------------------------------------------------------------

class JsonLineError(ValueError):
    """Why a line is not JSON, in words for a message's parentheses."""


def parse_json(line: str) -> Any:
    """``json.loads``, every way it fails on a damaged line raised as one :class:`JsonLineError` (this reader's and
    observe/export.py's)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise JsonLineError(f"{exc.msg} at column {exc.colno}") from None
    except RecursionError:  # arrays or objects nested deeper than the parser's stack
        raise JsonLineError("nested too deeply to read") from None
    except ValueError as exc:  # an integer literal of more than 4,300 digits (int's conversion limit)
        raise JsonLineError(str(exc)) from None


def from_json(line: str) -> dict[str, Any]:
    """One JSONL row (a recording's line) to an in-memory event; raises :class:`EventError`."""
    try:
        row = parse_json(line)
    except JsonLineError as exc:
        raise EventError(f"not JSON ({exc})") from None
    if not isinstance(row, dict):
        raise EventError("a JSON value that is not an object")
    ts = row.get("ts")
    if isinstance(ts, str):
        row["ts"] = ts_from_iso(ts)
    elif not isinstance(ts, int) or isinstance(ts, bool):
        raise EventError("ts is missing")
    else:
        _usable_ts(ts, ts)
    detail = row.get("detail")
    if detail is not None and not isinstance(detail, str):
        row["detail"] = json.dumps(detail, sort_keys=True, separators=(",", ":"))
    check(row)
    try:  # every column's value of its type: a damaged line is refused here, not by the model or a writer later
        check_columns(row, EVENT_COLUMNS)
    except ValueCheckError as exc:
        raise EventError(f"bad value: {exc}") from None
    for name in ("generation", "prev_generation"):  # the fold counts on from these: the next must be an int32 too
        if row.get(name) == _LAST_INT32:
            raise EventError(f"bad value: {name}: {_LAST_INT32} has no next generation")
    return row



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


def iter_jsonl(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Strict reader for trusted canonical JSONL (our own outputs); adapters use the tolerant one."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield from_json(line)
            except EventError as exc:
                raise EventError(f"line {number}: {exc}") from exc
