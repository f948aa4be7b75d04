"""Hand-built canonical events (``rbl-event/1`` rows) and a small group's life in them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2025, 3, 1, tzinfo=UTC)
GROUP = "orders"
PARTITION = 17  # as in the spec's samples (the hash rule would give 31 for "orders")


def at(ms: int) -> str:
    """An ISO timestamp ``ms`` milliseconds after 2025-03-01 00:00 UTC."""
    return (T0 + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")


class Events:
    """Builds rows with increasing ``seq``; ``group``, ``broker_id`` and ``coord_partition`` as given."""

    def __init__(self, group: str = GROUP, broker_id: int | None = 1, coord_partition: int | None = PARTITION) -> None:
        self.group = group
        self.broker_id = broker_id
        self.coord_partition = coord_partition
        self._seq = itertools.count(1)
        self.rows: list[dict[str, Any]] = []

    def add(self, event_type: str, ms: int, **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = {
            "schema_version": "rbl-event/1", "source": "emulator", "source_ref": "", "seq": next(self._seq),
            "ts": at(ms), "ts_kind": "emulated", "cluster_id": "c", "group_id": self.group, "group_kind": "classic",
            "event_type": event_type,
        }
        if self.broker_id is not None:
            row["broker_id"] = self.broker_id
        if self.coord_partition is not None:
            row["coord_partition"] = self.coord_partition
        row.update(fields)
        self.rows.append(row)
        return row

    # -- one helper per event type, with the columns the recorder writes ------------------------

    def created(self, ms: int) -> None:
        self.add("GROUP_EMPTY", ms, generation=0, reason_raw="group created by join", reason_code="group_created")

    def pending(self, ms: int, member: str, client: str) -> None:
        self.add("MEMBER_JOIN_REQUEST", ms, member_id=member, client_id=client, client_host="/10.0.0.5",
                 session_timeout_ms=45000, supported_protocols=["range", "cooperative-sticky"],
                 reason_raw="member id required", reason_code="member_id_required")

    def rejoin(self, ms: int, member: str, generation: int, instance: str | None = None,
               protocols: tuple[str, ...] = ("range",)) -> None:
        self.add("MEMBER_JOIN_REQUEST", ms, member_id=member, group_instance_id=instance,
                 supported_protocols=list(protocols), generation=generation, reason_code="member_rejoin")

    def joined(self, ms: int, member: str, client: str, instance: str | None = None,
               protocols: tuple[str, ...] = ("range", "cooperative-sticky"), generation: int = 0) -> None:
        self.add("MEMBER_JOINED", ms, member_id=member, group_instance_id=instance, client_id=client,
                 client_host="/10.0.0.5", protocol_type="consumer", supported_protocols=list(protocols),
                 session_timeout_ms=45000, rebalance_timeout_ms=300000, generation=generation,
                 subscription={"topics": ["orders"], "owned": [], "generation": -1, "rack": None})

    def prepare(self, ms: int, old: int, reason: str, code: str) -> None:
        self.add("REBALANCE_PREPARE", ms, reason_raw=reason, reason_code=code, prev_generation=old, generation=old + 1)

    def complete(self, ms: int, generation: int, leader: str, n: int, n_static: int = 0,
                 protocol: str = "range") -> None:
        self.add("JOIN_COMPLETE", ms, generation=generation, prev_generation=generation - 1, protocol_type="consumer",
                 protocol=protocol, leader_id=leader, supported_protocols=["range"], n_members=n, n_static=n_static)

    def sync(self, ms: int, generation: int, leader: str, n: int, protocol: str = "range") -> None:
        self.add("SYNC_LEADER_ASSIGNMENT", ms, generation=generation, leader_id=leader, protocol=protocol, n_members=n)

    def snapshot(self, ms: int, generation: int, leader: str, members: list[dict[str, Any]],
                 protocol: str = "range") -> None:
        self.add("GENERATION_SNAPSHOT", ms, generation=generation, protocol_type="consumer", protocol=protocol,
                 leader_id=leader, n_members=len(members),
                 n_static=sum(1 for m in members if m.get("group_instance_id")), members=members)

    def left(self, ms: int, member: str, instance: str | None = None, cause: str = "member_leave",
             leader: str | None = None) -> None:
        self.add("MEMBER_LEFT", ms, member_id=member, group_instance_id=instance, reason_code=cause, leader_id=leader)


def member_row(member: str, client: str, assignment: list[tuple[str, int]], instance: str | None = None,
               owned: list[tuple[str, int]] | None = None, generation: int = -1,
               rack: str | None = None) -> dict[str, Any]:
    """A GENERATION_SNAPSHOT member."""
    return {
        "member_id": member, "group_instance_id": instance, "client_id": client, "client_host": "/10.0.0.5",
        "rack_id": rack, "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
        "topics": sorted({t for t, _ in assignment} | {"orders"}),
        "owned": [{"topic": t, "partition": p} for t, p in owned or []], "generation": generation,
        "assignment": [{"topic": t, "partition": p} for t, p in assignment],
    }


def lifecycle() -> list[dict[str, Any]]:
    """A group that sees every broker-side event type once (member ids are short on purpose)."""
    e = Events()
    e.created(0)
    e.pending(1, "m1", "c1")
    e.joined(2, "m1", "c1")
    e.prepare(2, 0, "Adding new member m1 with group instance id null; client reason: need to re-join with the "
                    "given member-id: m1", "member_join")
    e.joined(3, "s1", "c2", instance="inst-1", protocols=("range",))
    e.complete(4, 1, "m1", 2, 1)
    e.sync(5, 1, "m1", 2)
    e.snapshot(5, 1, "m1", [member_row("m1", "c1", [("orders", 0)]),
                            member_row("s1", "c2", [("orders", 1)], instance="inst-1")])
    e.add("STATIC_MEMBER_REPLACED", 6, member_id="s2", group_instance_id="inst-1", supported_protocols=["range"],
          generation=1, leader_id="m1", raw="replaced s1")
    e.joined(7, "m3", "c3", generation=1)  # a JoinGroup v3 client: no MEMBER_ID_REQUIRED step
    e.prepare(7, 1, "Adding new member m3 with group instance id null; client reason: not provided", "member_join")
    e.pending(8, "m4", "c4")
    e.add("PENDING_MEMBER_EXPIRED", 9, member_id="m4", reason_code="timeout")
    e.pending(9, "m5", "c5")
    e.add("PENDING_MEMBER_EXPIRED", 9, member_id="m5", reason_code="leave")
    e.add("MEMBERS_DROPPED_NOT_REJOINED", 10, raw="m3,m9", n_members=2, generation=1)
    e.complete(10, 2, "m1", 2, 1)
    e.sync(11, 2, "m1", 2)
    e.add("MEMBER_SESSION_EXPIRED", 12, member_id="m1", group_instance_id=None, reason_code="session_timeout",
          leader_id="s2")
    e.prepare(12, 2, "removing member m1 on heartbeat expiration.", "session_timeout")
    e.complete(13, 3, "s2", 1, 1)
    e.sync(14, 3, "s2", 1)
    e.left(15, "s2", instance="inst-1")
    e.prepare(15, 3, "explicit `LeaveGroup` request for (s2) members.", "member_leave")
    e.add("GROUP_EMPTY", 15, generation=4, n_members=0)
    e.add("GROUP_DEAD", 16, generation=4)
    return e.rows
