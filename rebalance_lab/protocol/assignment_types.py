"""The value types every assignor takes and returns.

They mirror Java's ``ConsumerPartitionAssignor`` inputs (``Cluster``,
``GroupSubscription``) and outputs (``GroupAssignment``) closely enough that a
port can follow the Java code line by line, and that the differential harness
under ``tests/java`` can feed the same case to both implementations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """One partition as the leader's metadata shows it (Java ``PartitionInfo``).

    ``replica_racks`` holds the rack of every replica (offline ones included),
    ``None`` where a broker has no rack; rack-aware logic drops the ``None``s.
    Slotted: a big cluster has a million of these, and assignors read every one.
    """

    partition: int
    replica_racks: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class ClusterView:
    """Topic -> partitions, in any order (assignors sort as Java does).

    A view is immutable; what assignors derive from it per topic (the partitions sorted by
    id) is kept in ``derived`` so a view reused for many assignments, as the replay's
    what-ifs and the benchmarks reuse theirs, derives it once. Java's ``Cluster`` likewise
    indexes its partitions by topic once, when it is built.
    """

    topics: Mapping[str, Sequence[PartitionMeta]]
    derived: dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @staticmethod
    def of_counts(counts: Mapping[str, int]) -> ClusterView:
        """A rack-less cluster from ``{topic: partition_count}``."""
        return ClusterView({t: _rackless_partitions(n) for t, n in counts.items()})


_SHARED_LAYOUT_MAX = 1024  # a cluster of larger topics is not built again and again
_rackless: dict[int, tuple[PartitionMeta, ...]] = {}


def _rackless_partitions(count: int) -> tuple[PartitionMeta, ...]:
    """Partitions 0..count-1 without racks; up to :data:`_SHARED_LAYOUT_MAX` made once and shared
    (they are immutable): the replay's what-if builds a view for each layout of thousands of groups."""
    found = _rackless.get(count)
    if found is None:
        found = tuple(PartitionMeta(p) for p in range(count))
        if count <= _SHARED_LAYOUT_MAX:
            _rackless[count] = found
    return found


@dataclass(frozen=True)
class Subscription:
    """Java ``ConsumerPartitionAssignor.Subscription`` (after deserialisation).

    ``generation_id`` and ``rack_id`` are ``None`` where Java's Optional is empty.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int | None = None
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    """Java ``ConsumerPartitionAssignor.Assignment``: partitions in assignor output order."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


@dataclass(frozen=True)
class GroupSubscription:
    """The leader's input. ``members`` iterates in JoinGroup-response member order;
    assignors that depend on Java ``HashMap`` order re-derive that order themselves."""

    members: Mapping[str, Subscription] = field(default_factory=dict)


class Assignor(Protocol):
    """A partition assignor: a pure function of its inputs, like Java's."""

    @property
    def name(self) -> str: ...

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]: ...
