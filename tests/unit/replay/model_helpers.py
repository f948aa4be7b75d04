"""Hand-built canonical events for the per-group replay tests: a small builder, one method per event type."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rebalance_lab.replay import tables
from rebalance_lab.replay.model import ReplayOptions, replay_group

T0 = 1_700_000_000_000_000  # epoch microseconds
MS = 1000
S = 1_000_000

Event = dict[str, Any]
Parts = Sequence[tuple[str, int]]


def at(ms: float) -> int:
    return T0 + int(ms * MS)


def tp_rows(parts: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in parts]


def parts(topic: str, *ids: int) -> list[tuple[str, int]]:
    return [(topic, i) for i in ids]


class Group:
    """Events of one group, in the order they are added; ``seq`` counts per source."""

    def __init__(self, group: str = "g", cluster: str = "c1", source: str = "emulator") -> None:
        self.group, self.cluster, self.source = group, cluster, source
        self.events: list[Event] = []
        self.seqs: dict[str, int] = {}

    def ev(self, ms: float, event_type: str, *, source: str | None = None, **fields: Any) -> Event:
        src = source or self.source
        self.seqs[src] = self.seqs.get(src, 0) + 1
        event = {"schema_version": "rbl-event/1", "source": src, "source_ref": f"{src}:{self.seqs[src]}",
                 "seq": self.seqs[src], "ts": at(ms), "ts_kind": "emulated", "cluster_id": self.cluster,
                 "group_id": self.group, "group_kind": "classic", "event_type": event_type}
        event.update({k: v for k, v in fields.items() if v is not None})
        self.events.append(event)
        return event

    # -- coordinator ---------------------------------------------------------------------------------------------

    def prepare(self, ms: float, prev: int, reason: str | None = "member_join", *, old_shape: bool = False,
                **fields: Any) -> Event:
        if old_shape:  # the emulator's first recordings: generation = the old generation
            return self.ev(ms, "REBALANCE_PREPARE", generation=prev, reason_code=reason, **fields)
        return self.ev(ms, "REBALANCE_PREPARE", prev_generation=prev, generation=prev + 1, reason_code=reason,
                       **fields)

    def join(self, ms: float, gen: int, leader: str, protocol: str | None = "range", **fields: Any) -> Event:
        return self.ev(ms, "JOIN_COMPLETE", generation=gen, prev_generation=gen - 1, leader_id=leader,
                       protocol=protocol, protocol_type="consumer", **fields)

    def sync(self, ms: float, gen: int, leader: str, **fields: Any) -> Event:
        return self.ev(ms, "SYNC_LEADER_ASSIGNMENT", generation=gen, leader_id=leader, **fields)

    def empty(self, ms: float, gen: int, **fields: Any) -> Event:
        return self.ev(ms, "GROUP_EMPTY", generation=gen, n_members=0, **fields)

    def snapshot(self, ms: float, gen: int, assignment: Mapping[str, Parts], *, protocol: str = "range",
                 leader: str | None = None, topics: Sequence[str] = ("t",),
                 owned: Mapping[str, Parts] | None = None, sub_gen: Mapping[str, int] | int | None = None,
                 instances: Mapping[str, str] | None = None, clients: Mapping[str, str] | None = None,
                 session_timeout_ms: int = 10_000, **fields: Any) -> Event:
        members = []
        for member_id, assigned in assignment.items():
            generation = sub_gen.get(member_id, -1) if isinstance(sub_gen, Mapping) else sub_gen
            members.append({
                "member_id": member_id, "group_instance_id": (instances or {}).get(member_id),
                "client_id": (clients or {}).get(member_id, member_id.split("-")[0]), "client_host": "/10.0.0.1",
                "rack_id": None, "session_timeout_ms": session_timeout_ms, "rebalance_timeout_ms": 30_000,
                "topics": list(topics), "owned": tp_rows((owned or {}).get(member_id, ())),
                "generation": generation, "assignment": tp_rows(assigned),
            })
        return self.ev(ms, "GENERATION_SNAPSHOT", generation=gen, protocol_type="consumer", protocol=protocol,
                       leader_id=leader or next(iter(assignment), None), members=members, **fields)

    # -- members -----------------------------------------------------------------------------------------------

    def joined(self, ms: float, member: str, *, instance: str | None = None, client: str | None = None,
               session_timeout_ms: int = 10_000, topics: Sequence[str] = ("t",), **fields: Any) -> Event:
        return self.ev(ms, "MEMBER_JOINED", member_id=member, group_instance_id=instance,
                       client_id=client or member.split("-")[0], client_host="/10.0.0.1",
                       session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=30_000,
                       subscription={"topics": list(topics), "owned": [], "generation": -1, "rack": None}, **fields)

    def left(self, ms: float, member: str, **fields: Any) -> Event:
        return self.ev(ms, "MEMBER_LEFT", member_id=member, reason_code="member_leave", **fields)

    def expired(self, ms: float, member: str, **fields: Any) -> Event:
        return self.ev(ms, "MEMBER_SESSION_EXPIRED", member_id=member, reason_code="session_timeout", **fields)

    # -- a whole generation --------------------------------------------------------------------------------------

    def generation(self, ms: float, gen: int, assignment: Mapping[str, Parts], *, reason: str | None = "member_join",
                   protocol: str = "range", took_ms: float = 100, **snapshot: Any) -> None:
        """prepare at ``ms``, join done at +70%, sync and snapshot at +``took_ms``."""
        leader = next(iter(assignment))
        self.prepare(ms, gen - 1, reason)
        self.join(ms + took_ms * 0.7, gen, leader, protocol, n_members=len(assignment))
        self.sync(ms + took_ms, gen, leader, protocol=protocol)
        self.snapshot(ms + took_ms, gen, assignment, protocol=protocol, leader=leader, **snapshot)


def topic_metadata(ms: float, counts: Mapping[str, int], cluster: str = "c1") -> Event:
    return {"schema_version": "rbl-event/1", "source": "emulator", "source_ref": "", "seq": 0, "ts": at(ms),
            "ts_kind": "emulated", "cluster_id": cluster, "group_id": None, "event_type": "TOPIC_METADATA",
            "topic_partitions": dict(counts)}


def replay(events: list[Event], topics: list[Event] | None = None, whatif: Sequence[str] = (),
           options: ReplayOptions | None = None) -> dict[str, list[dict[str, Any]]]:
    """``replay_group``, checking every table converts to its exact Arrow schema."""
    result = replay_group(events, topics or [], whatif=whatif, options=options)
    for name, rows in result.items():
        tables.to_arrow(name, rows)
    return result


def by(rows: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {row[key]: row for row in rows}
