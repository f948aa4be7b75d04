"""``serve --record FILE``: every coordinator record as one JSON line, flushed as it happens.

Rows follow the canonical event schema (``docs/event-schema.md``,
``schema_version: "rbl-event/1"``). Subscription and assignment bytes of
``consumer``-protocol groups are decoded here, so a recording replays without
our codec. A ``TOPIC_METADATA`` row is written for every topic change, since the
what-if replay needs partition counts. Every group row also names the group's
``__consumer_offsets`` partition and the broker coordinating it at that moment, the
two columns a broker log line carries. KIP-848 consumer groups' records (``group_kind``
``consumer``) are rows of their own types (``K848_*``), listed in the same document.

The recording streams: each row goes to the file as it happens (``RecordingFile``: flushed per line,
write errors reported, never raised) and nothing per event stays here, so a recording of any length
costs the same memory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Protocol

from rebalance_lab.coordinator.classic.records import SCHEMA_VERSION, GenerationSnapshot, GroupRecord, MemberJoined
from rebalance_lab.coordinator.cluster import OFFSETS_TOPIC, TopicInfo
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.routing import partition_for
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe import decode
from rebalance_lab.observe.recording_file import RecordingFile

STATUS_KEY = "recording"


class LineSink(Protocol):
    def write_line(self, line: str) -> None: ...


def iso_ms(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


class JsonlRecorder:
    def __init__(self, out: LineSink, world: World) -> None:
        self._out = out
        self._world = world
        self._seq = 0

    def write(self, row: dict[str, Any]) -> None:
        self._seq += 1
        row["seq"] = self._seq
        row.setdefault("cluster_id", self._world.config.cluster_id)
        self._out.write_line(json.dumps(row, separators=(",", ":"), default=str))

    def on_record(self, record: GroupRecord) -> None:
        if not record.event_type:
            return  # state only, no event of its own (a KIP-848 regex resolution)
        row = record.to_event()
        if row.get("group_id") is not None:
            row["broker_id"], row["coord_partition"] = coordinator_of(self._world, record.group_id)
        if isinstance(record, GenerationSnapshot):
            _decode_snapshot(row, record)
        elif isinstance(record, MemberJoined):
            _decode_join(row, record)
        self.write(row)

    def on_topic(self, name: str, info: TopicInfo | None) -> None:
        self.write({
            "schema_version": SCHEMA_VERSION, "source": "emulator", "source_ref": "", "seq": 0,
            "ts": iso_ms(self._world.now_ms()), "ts_kind": "emulated", "group_id": None,
            "event_type": "TOPIC_METADATA",
            "topic_partitions": {name: len(info.partitions) if info else 0},
        })


def coordinator_of(world: World, group_id: str) -> tuple[int | None, int]:
    """(coordinator broker id, offsets partition) as routing sees them, without creating the
    offsets topic (``routing.coordinator_for`` would); the broker is None while the partition
    has no live leader."""
    partition = partition_for(group_id, world.config.group.offsets_topic_num_partitions)
    overrides: dict[str, int] = world.services.get("coordinator_overrides", {})
    if group_id in overrides:  # a moved coordinator (fault injection)
        return overrides[group_id], partition
    topic = world.cluster.topics.get(OFFSETS_TOPIC)
    if topic is None or partition >= len(topic.partitions):
        return None, partition
    leader = topic.partitions[partition].leader
    return (leader if leader >= 0 else None), partition


def _decode_join(row: dict[str, Any], record: MemberJoined) -> None:
    metadata = record.protocols[0][1] if record.protocols else b""
    row["subscription"] = decode.subscription(metadata, record.protocol_type)
    row.pop("protocols", None)
    row["supported_protocols"] = [name for name, _ in record.protocols]


def _decode_snapshot(row: dict[str, Any], record: GenerationSnapshot) -> None:
    members = []
    for member, snap in zip(row.get("members") or [], record.members, strict=False):
        sub = decode.subscription(snap.metadata, record.protocol_type)
        member["topics"] = sub["topics"] if sub else None
        member["owned"] = sub["owned"] if sub else None
        member["rack_id"] = sub["rack"] if sub else None
        member["generation"] = sub["generation"] if sub else None  # the subscription's generationId, -1 if unset
        member["assignment"] = decode.assignment(snap.assignment, record.protocol_type)
        members.append(member)
    row["members"] = members


def install(world: World, out: RecordingFile) -> JsonlRecorder:
    recorder = JsonlRecorder(out, world)
    world.services[STATUS_KEY] = out
    service_of(world).subscribe(recorder.on_record)
    world.cluster.on_change(recorder.on_topic)
    transactions_of(world).listeners.append(lambda event: recorder.write(event.to_event(iso_ms(event.ts_ms))))
    for name, info in world.cluster.topics.items():
        recorder.on_topic(name, info)
    return recorder


def recording_of(world: World) -> RecordingFile | None:
    """The world's ``--record`` file (what it wrote, what it lost), or None."""
    out = world.services.get(STATUS_KEY)
    return out if isinstance(out, RecordingFile) else None
