"""Round trips: an emulator recording -> a real format (``observe.formats.render``) -> our adapter -> the
recording's events again, projected onto the columns that format carries (spec §5, "Our own recording format").

The recording is ``samples/demo-recording.jsonl`` (``rebalance-lab demo``: a vote, a leave, a crash and
expiry, a static member restarting without a rebalance).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from rebalance_lab.observe.formats import render
from rebalance_lab.replay.events import from_json
from tests.unit.replay.adapter_support import SAMPLES, parse_text

Event = dict[str, Any]

_LINES = (SAMPLES / "demo-recording.jsonl").read_text(encoding="utf-8").splitlines()
RENDERABLE = [json.loads(line) for line in _LINES]  # ISO-8601 ts, as the renderers read a recording
RECORDING = [from_json(line) for line in _LINES]  # ts in epoch µs, as the adapters produce it
ZONE = "Asia/Kolkata"  # UTC+05:30: a wrong zone handling would be off by a non-whole hour


def _parse(lines: Iterable[str], fmt: str, **context: Any) -> list[Event]:
    events, report = parse_text("".join(line + "\n" for line in lines), fmt, name="rendered", **context)
    assert report.unparsed == 0, report.to_dict()
    assert events
    return events


# --- broker server.log ----------------------------------------------------------------------------------------------

BROKER_COLUMNS: dict[str, tuple[str, ...]] = {
    "REBALANCE_PREPARE": ("generation", "prev_generation", "reason_code"),
    "MEMBER_JOIN_REQUEST": ("member_id",),
    "MEMBER_JOINED": ("member_id", "group_instance_id"),
    "STATIC_MEMBER_REPLACED": ("group_instance_id", "raw"),
    "MEMBER_LEFT": ("member_id",),
    "MEMBER_SESSION_EXPIRED": ("member_id",),
    "PENDING_MEMBER_EXPIRED": ("member_id", "reason_code"),
    "MEMBERS_DROPPED_NOT_REJOINED": ("raw", "n_members"),
    "JOIN_COMPLETE": ("generation", "prev_generation", "n_members"),
    "SYNC_LEADER_ASSIGNMENT": ("generation", "leader_id", "n_members"),
    "GROUP_EMPTY": ("generation",),
    "GROUP_DEAD": ("generation",),
}


def _broker_logs(event: Event, java: bool) -> bool:
    """Whether the broker writes an INFO line for this recorded event (what the format carries)."""
    kind = event["event_type"]
    if kind not in BROKER_COLUMNS:
        return False
    if kind == "MEMBER_JOIN_REQUEST":
        return bool(event.get("reason_code") == "member_id_required")  # a rejoin logs nothing
    if kind == "GROUP_EMPTY":
        return bool(event.get("reason_code") != "group_created")
    if kind == "MEMBER_LEFT":
        return bool(event.get("reason_code") == "member_leave")
    if kind == "MEMBER_JOINED" and not java:
        # a pending dynamic member's second join: Kafka 3.x logs it at DEBUG only (a 3.9.2 broker at INFO has none)
        return event.get("group_instance_id") is not None or event.get("member_id") not in _ASKED_FOR_AN_ID
    return not (kind == "GROUP_DEAD" and java)


#: Members the coordinator gave an id and asked to rejoin (B7): their second join is the pending member's.
_ASKED_FOR_AN_ID = {e.get("member_id") for e in RECORDING
                    if e["event_type"] == "MEMBER_JOIN_REQUEST" and e.get("reason_code") == "member_id_required"}


def _broker_row(event: Event) -> tuple[Any, ...]:
    common = (event["event_type"], event["ts"], event["group_id"], event.get("broker_id"),
              event.get("coord_partition"))
    return common + tuple(event.get(column) for column in BROKER_COLUMNS[event["event_type"]])


@pytest.mark.parametrize(("fmt", "noise"), [("broker-log-scala", False), ("broker-log-java", False),
                                            ("broker-log-scala", True), ("broker-log-java", True)])
def test_broker_log_round_trip(fmt: str, noise: bool) -> None:
    java = fmt.endswith("java")
    # Scala lines print the offsets partition in B1/B2/B4 only: the partition count names it for the others.
    parsed = _parse(render(RENDERABLE, fmt, tz=ZONE, noise=noise), "broker-log", tz=ZONE,
                    options={"offsets_partitions": 50})
    expected = [_broker_row(e) for e in RECORDING if _broker_logs(e, java)]
    # Scala logs a leave after the rebalance it causes: same millisecond, other order, so compare as multisets.
    assert sorted(map(_broker_row, parsed), key=repr) == sorted(expected, key=repr)
    assert {e["source"] for e in parsed} == {"broker_log"}


def test_broker_log_round_trip_keeps_the_scala_leave_lines_member_metadata() -> None:
    parsed = _parse(render(RENDERABLE, "broker-log-scala", tz=ZONE), "broker-log", tz=ZONE)
    joined = {e["member_id"]: e for e in RECORDING if e["event_type"] == "MEMBER_JOINED"}
    left = [e for e in parsed if e["event_type"] == "MEMBER_LEFT"]
    assert left
    for event in left:
        member = joined[event["member_id"]]
        for column in ("client_id", "client_host", "session_timeout_ms", "rebalance_timeout_ms",
                       "supported_protocols", "group_instance_id"):
            assert event.get(column) == member.get(column), column


# --- __consumer_offsets dumps -----------------------------------------------------------------------------------

SNAPSHOT_COLUMNS = ("generation", "protocol_type", "protocol", "leader_id", "n_members", "n_static", "members")
JOIN_COLUMNS = ("generation", "protocol", "leader_id", "n_members")


def _by_generation(kind: str) -> dict[int, Event]:
    return {e["generation"]: e for e in RECORDING if e["event_type"] == kind}


def _offsets_expected(snapshot_at_join: bool) -> list[tuple[Any, ...]]:
    """The group's creation (Kafka 4.x writes an empty record then: GROUP_EMPTY and its empty snapshot, both at
    the creation time), then a JOIN_COMPLETE at the join's time and the snapshot, per recorded generation snapshot."""
    joins = _by_generation("JOIN_COMPLETE")
    created = next(e for e in RECORDING if e.get("reason_code") == "group_created")
    at_creation = (created["ts"], created["group_id"], 0, None, None, None, 0)
    rows: list[tuple[Any, ...]] = [("GROUP_EMPTY", *at_creation, None, None),
                                   ("GENERATION_SNAPSHOT", *at_creation, 0, [])]
    for generation, snap in sorted(_by_generation("GENERATION_SNAPSHOT").items()):
        join = joins[generation]
        rows.append(("JOIN_COMPLETE", join["ts"], snap["group_id"], *tuple(join.get(c) for c in JOIN_COLUMNS)))
        at = join["ts"] if snapshot_at_join else snap["ts"]
        rows.append(("GENERATION_SNAPSHOT", at, snap["group_id"], *tuple(snap.get(c) for c in SNAPSHOT_COLUMNS)))
    return rows


def _offsets_row(event: Event) -> tuple[Any, ...]:
    columns = JOIN_COLUMNS if event["event_type"] == "JOIN_COMPLETE" else SNAPSHOT_COLUMNS
    return (event["event_type"], event["ts"], event["group_id"], *tuple(event.get(c) for c in columns))


def test_dump_log_round_trip() -> None:
    parsed = _parse(render(RENDERABLE, "dump-log"), "dump-log")
    assert [_offsets_row(e) for e in parsed] == _offsets_expected(snapshot_at_join=False)
    partition = RECORDING[-1]["coord_partition"]
    assert {e["coord_partition"] for e in parsed} == {partition}
    assert all(e["source_ref"].startswith(f"__consumer_offsets-{partition}@") for e in parsed)


def test_console_json_round_trip() -> None:
    parsed = _parse(render(RENDERABLE, "console-json"), "console-json")
    assert [_offsets_row(e) for e in parsed] == _offsets_expected(snapshot_at_join=True)
    assert {e["ts_kind"] for e in parsed} == {"current_state"}


# --- client logs ------------------------------------------------------------------------------------------------

def _client_expected() -> list[tuple[Any, ...]]:
    """What every member's consumer logs about the recorded generations (eager protocol in the demo)."""
    joins = _by_generation("JOIN_COMPLETE")
    rows: list[tuple[Any, ...]] = []
    for generation, snap in _by_generation("GENERATION_SNAPSHOT").items():
        join, protocol = joins[generation], snap["protocol"]
        members = {m["member_id"]: m["assignment"] for m in snap["members"]}
        rows.extend(("CLIENT_JOINED", join["ts"], generation, m, protocol) for m in members)
        rows.extend(("CLIENT_SYNCED", snap["ts"], generation, m, protocol) for m in members)
        rows.extend(("CLIENT_PARTITIONS_ASSIGNED", snap["ts"], generation, m, _tps(a)) for m, a in members.items())
        rows.append(("CLIENT_LEADER_ASSIGNMENT", snap["ts"], generation, snap["leader_id"],
                     tuple(sorted((m, _tps(a)) for m, a in members.items()))))
    rows.extend(("MEMBER_LEFT", e["ts"], None, e["member_id"], None) for e in RECORDING
                if e["event_type"] == "MEMBER_LEFT" and e.get("reason_code") == "member_leave")
    return rows


def _tps(partitions: Iterable[dict[str, Any]]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((tp["topic"], tp["partition"]) for tp in partitions))


def _client_row(event: Event) -> tuple[Any, ...] | None:
    kind = event["event_type"]
    if kind in ("CLIENT_JOINED", "CLIENT_SYNCED"):
        return kind, event["ts"], event["generation"], event["member_id"], event["protocol"]
    if kind == "CLIENT_PARTITIONS_ASSIGNED":
        return kind, event["ts"], event["generation"], event["member_id"], _tps(event["partitions"])
    if kind == "CLIENT_LEADER_ASSIGNMENT":
        return kind, event["ts"], event["generation"], event["leader_id"], tuple(sorted(
            (m["member_id"], _tps(m["assignment"])) for m in event["members"]))
    if kind == "MEMBER_LEFT":
        return kind, event["ts"], None, event["member_id"], None
    return None


@pytest.mark.parametrize(("layout", "envelope"), [
    (None, None),  # log4j [%d] %p %m (%c)
    ("%d{yyyy-MM-dd HH:mm:ss.SSS} [%t] %-5p %c - %m%n", "logback"),
])
def test_client_log_round_trip(layout: str | None, envelope: str | None) -> None:
    options: dict[str, Any] = {"tz": ZONE} if layout is None else {"tz": ZONE, "layout": layout}
    parsed = _parse(render(RENDERABLE, "client-log", **options), "client-log", tz=ZONE,
                    options={"envelope": envelope} if envelope else {})
    rows = [row for row in map(_client_row, parsed) if row is not None]
    assert sorted(rows, key=repr) == sorted(_client_expected(), key=repr)
    assert {e["group_id"] for e in parsed} == {"demo-group"}
    static = [e for e in parsed if e.get("group_instance_id") is not None]
    assert static and {e["group_instance_id"] for e in static} == {"static-1"}
