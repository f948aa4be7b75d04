"""A group of sans-I/O light members (:class:`~rebalance_lab.clients.member.state.MemberState`) driven
generation by generation in memory, recording the events an emulator recording holds.

It is the what-if's oracle below the emulator: the subscriptions are the bytes the light client
really builds, the assignment is what its leader computes with our assignors, and the snapshot is
decoded the way the recorder decodes it. No coordinator, sockets or clocks: every member rejoins
each generation, the first member leads, a cooperative member that revoked something asks for a
follow-up generation, and a static member restarted under its instance id gets its assignment back
without a rebalance (KIP-345).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rebalance_lab.clients.assignors import get_assignor
from rebalance_lab.clients.assignors.types import ClusterView
from rebalance_lab.clients.member import calls as c
from rebalance_lab.clients.member import leader as leader_mod
from rebalance_lab.clients.member.state import MemberState
from rebalance_lab.clients.member.subscription import SubscriptionSpec
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode

from .model_helpers import Event, Group, topic_metadata, tp_rows


@dataclass
class LightGroup:
    assignor: str
    counts: dict[str, int]
    group: Group = field(default_factory=Group)
    states: dict[str, MemberState] = field(default_factory=dict)  # member id -> state, in join order
    instances: dict[str, str] = field(default_factory=dict)  # member id -> group.instance.id
    assignments: dict[str, bytes] = field(default_factory=dict)
    generation: int = 0
    clock: float = 0.0
    serial: int = 0
    topics: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.topics.append(topic_metadata(-1, self.counts))

    def tick(self, ms: float = 100) -> float:
        self.clock += ms
        return self.clock

    def _state(self, instance: str | None) -> MemberState:
        return MemberState(session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                           subscription=SubscriptionSpec(tuple(sorted(self.counts)), (self.assignor,)),
                           group_instance_id=instance)

    def join(self, instance: str | None = None) -> str:
        self.serial += 1
        member_id = f"m{self.serial}-{self.serial * 7919:05d}"
        self.states[member_id] = self._state(instance)
        if instance is not None:
            self.instances[member_id] = instance
        self.group.joined(self.tick(), member_id, instance=instance, client=f"m{self.serial}")
        return member_id

    def leave(self, member_id: str) -> None:
        del self.states[member_id]
        self.group.left(self.tick(), member_id)

    def grow(self, topic: str, count: int) -> None:
        self.counts[topic] = count
        self.topics.append(topic_metadata(self.tick(), self.counts))

    def restart_static(self, member_id: str) -> str:
        """The process behind a static member restarts: a new member id, its assignment handed back."""
        instance = self.instances[member_id]
        old = self.states.pop(member_id)
        self.serial += 1
        new_id = f"m{self.serial}-{self.serial * 7919:05d}"
        state = self.states[new_id] = self._state(instance)
        self.instances[new_id] = instance
        self.group.ev(self.tick(), "STATIC_MEMBER_REPLACED", member_id=new_id, group_instance_id=instance,
                      generation=self.generation, raw=f"replaced {member_id}")
        state.start_join()
        state.on_join_result(c.JoinGroupResult(ErrorCode.NONE, new_id, self.generation, self.assignor, "x"))
        state.on_sync_result(c.SyncGroupResult(ErrorCode.NONE, self.assignments.get(member_id, b""), self.assignor))
        self.assignments[new_id] = self.assignments.pop(member_id, b"")
        assert old.owned == state.owned
        return new_id

    def rebalance(self, reason: str = "member_join") -> None:
        """One generation, then follow-ups while a cooperative member revoked something."""
        while self._generation(reason):
            reason = "leader_rejoin"

    def _generation(self, reason: str) -> bool:
        start = self.tick()
        self.group.prepare(start, self.generation, reason)
        self.generation += 1
        metadata = {}
        for member_id, state in self.states.items():
            call = state.start_join() if state.phase.value in ("unjoined", "stable") else state.join_call()
            metadata[member_id] = dict(call.protocols)[self.assignor]
        members = tuple(c.JoinedMember(m, self.instances.get(m), metadata[m]) for m in self.states)
        leader_id = next(iter(self.states))
        self.group.join(self.tick(), self.generation, leader_id, self.assignor, n_members=len(members))
        assignments = leader_mod.compute_assignment(get_assignor(self.assignor), ClusterView.of_counts(self.counts),
                                                    leader_mod.group_subscription(members))
        follow_up = False
        for member_id, state in self.states.items():
            lead = member_id == leader_id
            step = state.on_join_result(c.JoinGroupResult(ErrorCode.NONE, member_id, self.generation, self.assignor,
                                                          leader_id, members if lead else ()))
            if isinstance(step, c.RunAssignor):
                state.on_assignment(assignments)
            done = state.on_sync_result(c.SyncGroupResult(ErrorCode.NONE, assignments[member_id], self.assignor))
            assert isinstance(done, c.Assigned)
            follow_up = follow_up or done.rejoin_needed
        self.assignments = dict(assignments)
        at = self.tick()
        self.group.sync(at, self.generation, leader_id, protocol=self.assignor)
        self.group.ev(at, "GENERATION_SNAPSHOT", generation=self.generation, protocol_type="consumer",
                      protocol=self.assignor, leader_id=leader_id, members=[
                          self._snapshot_member(m, metadata[m], assignments[m]) for m in self.states])
        return follow_up

    def _snapshot_member(self, member_id: str, metadata: bytes, assignment: bytes) -> dict[str, object]:
        sub = cp.decode_subscription(metadata)
        return {
            "member_id": member_id, "group_instance_id": self.instances.get(member_id),
            "client_id": member_id.split("-")[0], "client_host": "/10.0.0.1", "rack_id": sub.rack_id,
            "session_timeout_ms": 10_000, "rebalance_timeout_ms": 30_000, "topics": list(sub.topics),
            "owned": tp_rows(sub.owned_partitions),
            "generation": sub.generation_id if sub.generation_id is not None else -1,
            "assignment": tp_rows(cp.decode_assignment(assignment).partitions),
        }
