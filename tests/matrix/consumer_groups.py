"""Looking at a KIP-848 consumer group through the Kafka protocol only (ConsumerGroupDescribe, API 69).

The classic matrix asks the in-process emulator for its group; the KIP-848 matrix runs against a
real broker too, so it asks the group coordinator what any admin tool would: FindCoordinator, then
ConsumerGroupDescribe v0 (state, group and assignment epochs, every member's epoch, client id and
current assignment). A group is *settled* when it is Stable and every member is at the group epoch
(GroupMetadataManager keeps the state Reconciling until then, spec/kip848.md §3.6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.clients.target import _RawConnection, _split

FIND_COORDINATOR, CONSUMER_GROUP_DESCRIBE = 10, 69
GROUP_ID_NOT_FOUND = 69


@dataclass(frozen=True)
class MemberView:
    member_id: str
    member_epoch: int
    client_id: str
    partitions: frozenset[int]  # of the topic asked about


@dataclass(frozen=True)
class ConsumerGroupView:
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[MemberView, ...]

    def settled_with(self, count: int) -> bool:
        """Stable, ``count`` members, each reconciled to the group epoch."""
        return (self.state == "Stable" and len(self.members) == count
                and all(m.member_epoch == self.group_epoch for m in self.members))


def _partitions(assignment: Any, topic: str) -> frozenset[int]:
    return frozenset(p for tp in assignment.topic_partitions if tp.topic_name == topic for p in tp.partitions)


class GroupDescriber:
    """ConsumerGroupDescribe v0 on the group's coordinator (the connection is kept)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._coordinators: dict[str, _RawConnection] = {}

    def describe(self, group: str, topic: str) -> ConsumerGroupView | None:
        """The group, or None while the coordinator does not know it as a consumer group (or is not found)."""
        coordinator = self._coordinator(group)
        if coordinator is None:
            return None
        response = coordinator.request(CONSUMER_GROUP_DESCRIBE, 0, group_ids=[group],
                                                    include_authorized_operations=False)
        (described,) = response.groups
        if described.error_code == GROUP_ID_NOT_FOUND:
            return None
        assert described.error_code == 0, f"ConsumerGroupDescribe {group}: {described}"
        members = tuple(MemberView(m.member_id, m.member_epoch, m.client_id, _partitions(m.assignment, topic))
                        for m in described.members)
        return ConsumerGroupView(described.group_state, described.group_epoch, described.assignment_epoch,
                                 described.assignor_name, members)

    def _coordinator(self, group: str) -> _RawConnection | None:
        if group not in self._coordinators:
            bootstrap = _RawConnection(*_split(self.bootstrap))
            try:
                found = bootstrap.request(FIND_COORDINATOR, 3, key=group, key_type=0)
            finally:
                bootstrap.close()
            if found.error_code != 0:  # COORDINATOR_NOT_AVAILABLE while a fresh broker creates its offsets topic
                return None
            self._coordinators[group] = _RawConnection(found.host, found.port)
        return self._coordinators[group]

    def close(self) -> None:
        for connection in self._coordinators.values():
            connection.close()
        self._coordinators.clear()
