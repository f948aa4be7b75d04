"""The assignors' value types, which live in :mod:`rebalance_lab.protocol.assignment_types`.

They moved down to ``protocol/`` because the consumer protocol's (de)serialisers use them and
``protocol/`` is the lowest layer (it imports nothing of ours from above); this name stays for
the assignors and the callers that import it.
"""

from __future__ import annotations

from rebalance_lab.protocol.assignment_types import (
    Assignment,
    Assignor,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)

__all__ = [
    "Assignment", "Assignor", "ClusterView", "GroupSubscription", "PartitionMeta", "Subscription", "TopicPartition",
]
