"""Kafka's consumer partition assignors, output identical to the Java client (spec assignors.md).

``get_assignor(name)`` returns a fresh instance; ``ASSIGNORS`` maps protocol names to classes.
"""

from __future__ import annotations

from rebalance_lab import compiled  # noqa: F401  (first: loads the compiled build when usable)
from rebalance_lab.clients.assignors.abstract_sticky import AbstractStickyAssignor
from rebalance_lab.clients.assignors.common import AssignorError
from rebalance_lab.clients.assignors.cooperative_sticky import CooperativeStickyAssignor
from rebalance_lab.clients.assignors.java_hashmap import UnsupportedJavaOrder
from rebalance_lab.clients.assignors.range import RangeAssignor
from rebalance_lab.clients.assignors.roundrobin import RoundRobinAssignor
from rebalance_lab.clients.assignors.sticky import StickyAssignor
from rebalance_lab.clients.assignors.types import (
    Assignment,
    Assignor,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)

ASSIGNORS: dict[str, type[RangeAssignor | RoundRobinAssignor | StickyAssignor | CooperativeStickyAssignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    StickyAssignor.name: StickyAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}


def get_assignor(name: str) -> Assignor:
    """A fresh assignor for a protocol name (``range``, ``roundrobin``, ``sticky``,
    ``cooperative-sticky``); ``KeyError`` for any other name."""
    return ASSIGNORS[name]()


__all__ = [
    "ASSIGNORS",
    "AbstractStickyAssignor",
    "Assignment",
    "Assignor",
    "AssignorError",
    "ClusterView",
    "CooperativeStickyAssignor",
    "GroupSubscription",
    "PartitionMeta",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "UnsupportedJavaOrder",
    "get_assignor",
]
