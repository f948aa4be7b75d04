"""Uniform assignor, the default (Kafka 4.4.0 ``org.apache.kafka.coordinator.group.assignor.UniformAssignor``).

Dispatches on the subscription type the coordinator computed. Neither builder reads racks in 4.4.0
(``SubscribedTopicDescriber.racksForPartition`` is never called), so ``rack_id`` and the partition racks
change nothing here.
"""

from __future__ import annotations

from rebalance_lab.coordinator.consumer.assignors.java_maps import JavaAssignment
from rebalance_lab.coordinator.consumer.assignors.spec import GroupSpec
from rebalance_lab.coordinator.consumer.assignors.types import SubscriptionType
from rebalance_lab.coordinator.consumer.assignors.uniform_heterogeneous import assign_heterogeneous
from rebalance_lab.coordinator.consumer.assignors.uniform_homogeneous import assign_homogeneous


def assign_uniform(spec: GroupSpec) -> dict[str, JavaAssignment | None]:
    """``UniformAssignor.assign``: nothing for an empty group, else the builder of the subscription type."""
    if not spec.member_ids:
        return {}
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        return assign_homogeneous(spec)
    return assign_heterogeneous(spec)
