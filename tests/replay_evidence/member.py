"""One kafka-python consumer of the evidence scenario, in its own process, writing down what it saw.

    python tests/replay_evidence/member.py '{"bootstrap": ..., "group": ..., "topic": ..., "client_id": ...,
                                             "instance_id": null, "strategies": ["range"]}'

After every completed JoinGroup/SyncGroup round (the coordinator's join-complete step) it prints one JSON
line: ``{"ev": "assigned", "generation", "member_id", "protocol", "leader", "partitions"}``, read
from the client's own coordinator state (the generation, member id and protocol of its JoinGroup
response, and whether it ran the assignment); a leader also prints ``{"ev": "led", "generation",
"member_id", "protocol", "members": {id: {"instance_id", "partitions"}}}`` when it assigns. That is
the clients' record the replay is checked against. SIGTERM closes the consumer (a dynamic member
sends LeaveGroup, a static one does not); SIGKILL is a crash. The script imports nothing from the
repository.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": event, "t": time.time(), **fields}) + "\n")
    sys.stdout.flush()


def main() -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.protocol.consumer import ConsumerProtocolAssignment

    spec = json.loads(sys.argv[1])
    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    consumer = KafkaConsumer(
        bootstrap_servers=spec["bootstrap"], group_id=spec["group"], client_id=spec["client_id"],
        group_instance_id=spec.get("instance_id"), session_timeout_ms=6000, heartbeat_interval_ms=500,
        max_poll_interval_ms=15000, partition_assignment_strategy=[assignors[s] for s in spec["strategies"]],
        enable_auto_commit=False, auto_offset_reset="earliest",
    )

    coordinator = consumer._coordinator
    completed = coordinator._on_join_complete_async

    async def on_join_complete(generation: int, member_id: str, protocol: str, assignment: bytes) -> Any:
        # Every completed JoinGroup/SyncGroup round, before the client acts on it: a leader that rejoins at once
        # (its metadata changed) would not reach the rebalance listener for this generation.
        partitions = ConsumerProtocolAssignment.decode(assignment).partitions()
        emit("assigned", generation=generation, member_id=member_id, protocol=protocol,
             leader=bool(coordinator._is_leader), partitions=sorted(tp.partition for tp in partitions))
        return await completed(generation, member_id, protocol, assignment)

    coordinator._on_join_complete_async = on_join_complete
    perform = coordinator._perform_assignment

    def perform_assignment(leader_id: str, protocol: str, members: Any) -> Any:
        # The leader's view of a generation: every member of the JoinGroup response and what it assigned them. A
        # leader that rejoins at once never completes the generation it led, but it did lead it.
        assignments = perform(leader_id, protocol, members)
        instances = {m.member_id: getattr(m, "group_instance_id", None) for m in members}
        emit("led", generation=coordinator._generation.generation_id, member_id=leader_id, protocol=protocol,
             members={member: {"instance_id": instances.get(member),
                               "partitions": sorted(tp.partition for tp in assignment.partitions())}
                      for member, assignment in assignments.items()})
        return assignments

    coordinator._perform_assignment = perform_assignment

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            pass

    deadline = time.monotonic() + 30
    while not consumer.partitions_for_topic(spec["topic"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    consumer.subscribe([spec["topic"]], listener=Listener())
    emit("started")
    try:
        while not stop:
            consumer.poll(timeout_ms=200)
    finally:
        consumer.close()
        emit("closed")


if __name__ == "__main__":
    main()
