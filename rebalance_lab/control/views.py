"""JSON-ready views of the world for the Python API and the HTTP control endpoint (no I/O).

Subscriptions and assignments of ``consumer``-protocol groups are decoded with
``rebalance_lab.protocol.consumer_protocol`` (through ``observe.decode``); other protocol
types show ``null`` there, since their bytes are opaque to the coordinator. Every group
names its ``type``: ``classic`` (JoinGroup/SyncGroup) or ``consumer`` (KIP-848, whose view is
:func:`consumer_group_json`: epochs, member states, assigned / pending-revocation / target
partitions by topic name).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.control.bounded_history import BoundedHistory
from rebalance_lab.control.epoch_history import EpochHistory
from rebalance_lab.coordinator.classic.records import GenerationSnapshot, GenerationStarted, GroupRecord
from rebalance_lab.coordinator.classic.view import GroupView, MemberView
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView, ConsumerMemberView, TopicPartitions
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
        "group_id": view.group_id, "type": "classic", "state": view.state, "generation": view.generation_id,
        "protocol_type": view.protocol_type, "protocol": view.protocol_name, "leader": view.leader_id,
        "coordinator": None if coordinator is None else coordinator.node_id,
        "members": [member_json(m, ptype, view.protocol_name) for m in view.members],
        "pending_members": list(view.pending_members),
    }


def groups_json(world: World) -> list[dict[str, Any]]:
    """Every group, classic and consumer, by group id."""
    service = service_of(world)
    rows = [group_json(world, v) for v in service.coordinator.groups()]
    rows += [consumer_group_json(world, v) for v in service.consumer.groups()]
    return sorted(rows, key=lambda row: str(row["group_id"]))


def any_group_json(world: World, group_id: str) -> dict[str, Any] | None:
    """One group of either type (a group id names one group, classic or consumer), or None."""
    service = service_of(world)
    consumer = service.consumer.group(group_id)
    if consumer is not None:
        return consumer_group_json(world, consumer)
    classic = service.coordinator.group(group_id)
    return None if classic is None else group_json(world, classic)


# -- KIP-848 consumer groups ----------------------------------------------------------------------------------------


def topic_names(world: World) -> dict[Any, str]:
    return {info.topic_id: name for name, info in world.cluster.topics.items()}


def tps_json(partitions: TopicPartitions, names: dict[Any, str]) -> list[dict[str, Any]]:
    """``[{topic, partition}]`` sorted, by topic name (a deleted topic by its id)."""
    rows = sorted((names.get(t, str(t)), p) for t, ps in partitions.items() for p in ps)
    return [{"topic": t, "partition": p} for t, p in rows]


def consumer_member_json(m: ConsumerMemberView, names: dict[Any, str]) -> dict[str, Any]:
    return {
        "member_id": m.member_id, "group_instance_id": m.instance_id, "rack_id": m.rack_id,
        "client_id": m.client_id, "client_host": m.client_host, "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch, "state": m.state,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex or None, "server_assignor": m.server_assignor,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "uses_classic_protocol": m.uses_classic_protocol,
        "assigned": tps_json(m.assigned, names), "pending_revocation": tps_json(m.pending_revocation, names),
        "target": tps_json(m.target, names),
    }


def consumer_group_json(world: World, view: ConsumerGroupView) -> dict[str, Any]:
    coordinator = coordinator_for(world, view.group_id)
    names = topic_names(world)
    # no member asking for one: the first of group.consumer.assignors (ConsumerGroupDescribe's AssignorName)
    assignor = view.preferred_assignor or service_of(world).consumer.config.assignors[0]
    return {
        "group_id": view.group_id, "type": "consumer", "state": view.state, "group_epoch": view.group_epoch,
        "assignment_epoch": view.assignment_epoch, "assignor": assignor,
        "coordinator": None if coordinator is None else coordinator.node_id,
        "members": [consumer_member_json(m, names) for m in view.members],
    }


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


class History(list[dict[str, Any]]):
    """A group's kept history entries, oldest first, with the cap per group and how many older ones were dropped."""

    def __init__(self, entries: list[dict[str, Any]], limit: int, dropped: int) -> None:
        super().__init__(entries)
        self.limit = limit
        self.dropped = dropped


class GenerationHistory:
    """The generations of every group, from the coordinator's records, oldest first, the newest few kept.

    An entry starts at ``GenerationStarted`` (join complete: members, votes, leader) and is
    completed by the ``GenerationSnapshot`` written when the assignment is stored (decoded). KIP-848
    consumer groups have one entry per group epoch (``EpochHistory``), in the same bounded store: at
    most ``history_limit`` entries per group and ``history_total_limit`` in all (``BoundedHistory``).
    """

    def __init__(self, per_group: int = 1_000, total: int = 10_000) -> None:
        self.store = BoundedHistory(per_group, total)
        self._epochs = EpochHistory(self.store)  # KIP-848 consumer groups: one entry per group epoch

    @classmethod
    def install(cls, world: World) -> GenerationHistory:
        existing = world.services.get(HISTORY_KEY)
        if isinstance(existing, GenerationHistory):
            return existing
        history = cls(world.config.history_limit, world.config.history_total_limit)
        world.services[HISTORY_KEY] = history
        if history.store.enabled:
            service_of(world).subscribe(history.on_record)
        return history

    def of(self, group_id: str) -> History:
        """Classic generations and (a group migrated online) consumer-group epochs, oldest first."""
        entries = [dict(entry) for entry in self.store.entries(group_id)]
        return History(entries, self.store.per_group, self.store.dropped(group_id))

    def on_record(self, record: GroupRecord) -> None:
        self._epochs.on_record(record)
        if isinstance(record, GenerationStarted):
            self.store.append(record.group_id, {
                "generation": record.generation, "started_ms": record.ts_ms, "protocol_type": record.protocol_type,
                "protocol": record.protocol, "leader": record.leader_id,
                "votes": dict(record.votes), "candidates": list(record.candidates),
                "members": [{"member_id": m, "group_instance_id": i} for m, i in record.members],
                "assignments": None, "stable_ms": None,
            })
        elif isinstance(record, GenerationSnapshot):
            self._complete(record)

    def _complete(self, record: GenerationSnapshot) -> None:
        entry = self.store.last(record.group_id, lambda e: "generation" in e and e["generation"] == record.generation)
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
