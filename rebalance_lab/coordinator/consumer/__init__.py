"""The KIP-848 consumer group (``group.protocol=consumer``), sans-I/O, beside the classic group.

:class:`~rebalance_lab.coordinator.consumer.coordinator.ConsumerGroupCoordinator` is the facade;
one module per concern: validation, members, heartbeat, regex, target, reconcile, leave,
describe, records/apply (spec/kip848.md; Kafka 4.4.0 ``GroupMetadataManager``).
"""
