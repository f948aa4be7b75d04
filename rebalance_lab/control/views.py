"""JSON-ready views of the world for the Python API and the HTTP control endpoint (no I/O).

Subscriptions and assignments of ``consumer``-protocol groups are decoded with
``rebalance_lab.protocol.consumer_protocol`` (through ``observe.decode``); other protocol
types show ``null`` there, since their bytes are opaque to the coordinator.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.classic.records import GenerationSnapshot, GenerationStarted, GroupRecord
from rebalance_lab.coordinator.classic.view import GroupView, MemberView
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.routing import coordinator_for
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe import decode

HISTORY_KEY = "generation_history"


def member_json(m: MemberView, protocol_type: str | None, protocol: str | None) -> dict[str, Any]:
    metadata = next((p.metadata for p in m.protocols if p.name == protocol), m.protocols[0].metadata
                    if m.protocols else b"")
    return {
        "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
        "client_host": m.client_host, "session_timeout_ms": m.session_timeout_ms,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "protocols": [p.name for p in m.protocols],
        "subscription": decode.subscription(metadata, protocol_type),
        "assignment": decode.assignment(m.assignment, protocol_type),
        "awaiting_join": m.awaiting_join, "awaiting_sync": m.awaiting_sync,
    }


def group_json(world: World, view: GroupView) -> dict[str, Any]:
    ptype = view.protocol_type or next((m.protocol_type for m in view.members), None)
    coordinator = coordinator_for(world, view.group_id)
    return {
        "group_id": view.group_id, "state": view.state, "generation": view.generation_id,
        "protocol_type": view.protocol_type, "protocol": view.protocol_name, "leader": view.leader_id,
        "coordinator": None if coordinator is None else coordinator.node_id,
        "members": [member_json(m, ptype, view.protocol_name) for m in view.members],
        "pending_members": list(view.pending_members),
    }


def groups_json(world: World) -> list[dict[str, Any]]:
    return [group_json(world, v) for v in service_of(world).coordinator.groups()]


def offsets_json(world: World, group_id: str) -> list[dict[str, Any]]:
    store = world.services["offsets"].store
    rows = [
        {"topic": topic, "partition": partition, "offset": c.offset, "leader_epoch": c.leader_epoch,
         "metadata": c.metadata, "commit_timestamp_ms": c.commit_timestamp_ms}
        for (topic, partition), c in store.fetch_all(group_id)
    ]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def brokers_json(world: World) -> list[dict[str, Any]]:
    return [
        {"node_id": n.node_id, "host": n.info.host, "port": n.info.port, "rack": n.info.rack, "up": n.up}
        for n in sorted(world.nodes.values(), key=lambda n: n.node_id)
    ]


class GenerationHistory:
    """Every generation of every group, from the coordinator's records, oldest first.

    An entry starts at ``GenerationStarted`` (join complete: members, votes, leader) and is
    completed by the ``GenerationSnapshot`` written when the assignment is stored (decoded).
    """

    def __init__(self) -> None:
        self._groups: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    def install(cls, world: World) -> GenerationHistory:
        existing = world.services.get(HISTORY_KEY)
        if isinstance(existing, GenerationHistory):
            return existing
        history = cls()
        world.services[HISTORY_KEY] = history
        service_of(world).subscribe(history.on_record)
        return history

    def of(self, group_id: str) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._groups.get(group_id, [])]

    def on_record(self, record: GroupRecord) -> None:
        if isinstance(record, GenerationStarted):
            self._groups.setdefault(record.group_id, []).append({
                "generation": record.generation, "started_ms": record.ts_ms, "protocol_type": record.protocol_type,
                "protocol": record.protocol, "leader": record.leader_id,
                "votes": dict(record.votes), "candidates": list(record.candidates),
                "members": [{"member_id": m, "group_instance_id": i} for m, i in record.members],
                "assignments": None, "stable_ms": None,
            })
        elif isinstance(record, GenerationSnapshot):
            self._complete(record)

    def _complete(self, record: GenerationSnapshot) -> None:
        entries = self._groups.get(record.group_id, [])
        entry = next((e for e in reversed(entries) if e["generation"] == record.generation), None)
        if entry is None:
            return
        entry["stable_ms"] = record.ts_ms
        entry["assignments"] = {
            m.member_id: decode.assignment(m.assignment, record.protocol_type) for m in record.members
        }
        entry["members"] = [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
             "subscription": decode.subscription(m.metadata, record.protocol_type)}
            for m in record.members
        ]


def history_of(world: World) -> GenerationHistory:
    return GenerationHistory.install(world)
