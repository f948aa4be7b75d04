"""kafka-python 3.x ``partition_assignment_strategy`` entries backed by our Java-identical assignors.

    from rebalance_lab.clients.adapters.kafka_python import KafkaPythonStickyAssignor
    KafkaConsumer("orders", group_id="g", partition_assignment_strategy=[KafkaPythonStickyAssignor])

kafka-python instantiates a class it is given (one instance per consumer, so sticky state is
never shared), or uses an instance as is. ``kafka_python_assignor(name, rack_id=...)`` makes a
class with options bound, since kafka-python calls the class without arguments.

What crosses kafka-python's interface, and what does not:

* JoinGroup metadata: ``metadata(topics)`` returns the Java bytes (subscription v3: sorted
  topics, user data, owned partitions, generation, rack) and kafka-python sends them as is.
* Leader: kafka-python decodes every member's metadata with the v0-v3 schema and passes
  ``group_instance_id``, so topics, user data, owned partitions, generation, rack and static
  ids all reach the assignor, in JoinGroup-response member order.
* Assignment: returned as Java's ``serializeAssignment`` v3 bytes (kafka-python sends bytes
  as is; its own ``ConsumerProtocolAssignment`` class lives in its codec, which the codec seam
  keeps out of this package).
* ``on_assignment(assignment, generation)`` gives the partitions in wire order and the
  generation, as Java's ``onAssignment`` gets them.
* Not carried: (1) a generation *reset* (Java sends -1 after losing its generation; the adapter
  only hears of successful assignments, so it sends the last generation it received);
  (2) ``client.rack``: kafka-python's ``client_rack`` is not visible to assignors - pass
  ``rack_id=`` to the factory; (3) the rebalance protocol kafka-python settled on: the
  cooperative-sticky adapter assumes COOPERATIVE (sends owned partitions) unless made with
  ``cooperative=False``; (4) Java refreshes metadata for topics only other members subscribe
  to before assigning, kafka-python's leader assigns with the metadata it has (topics it has
  none for are skipped, as Java skips unknown topics) and rebalances again once it arrives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

try:
    from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
except ImportError as exc:  # kafka-python is an optional extra since issue 21, not a dependency
    raise ImportError(
        "rebalance_lab.clients.adapters.kafka_python needs kafka-python 3.x: pip install 'rebalance-lab[clients]'"
    ) from exc

from rebalance_lab.clients.adapters._core import ADAPTED, AdapterCore, AdapterOptions, cluster_view
from rebalance_lab.clients.assignors import Subscription, TopicPartition
from rebalance_lab.protocol import consumer_protocol

__all__ = [
    "KafkaPythonAssignor",
    "KafkaPythonCooperativeStickyAssignor",
    "KafkaPythonRangeAssignor",
    "KafkaPythonRoundRobinAssignor",
    "KafkaPythonStickyAssignor",
    "kafka_python_assignor",
]


class KafkaPythonAssignor(AbstractPartitionAssignor):  # type: ignore[misc]  # kafka-python is untyped
    """Base adapter; use a named subclass or :func:`kafka_python_assignor`."""

    name: ClassVar[str] = ""
    options: ClassVar[AdapterOptions] = AdapterOptions()

    def __init__(self) -> None:
        self.core = AdapterCore(self.name, self.options)

    def supported_protocols(self) -> list[Any]:
        # Java: cooperative-sticky supports [COOPERATIVE, EAGER], the others [EAGER].
        if self.name == "cooperative-sticky":
            return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: Iterable[str]) -> bytes:
        return self.core.subscription_bytes(topics)

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, bytes]:
        subs = [(str(m.member_id), _subscription(m)) for m in members]
        topics = {t for _, sub in subs for t in sub.topics}
        view = cluster_view(sorted(topics), cluster.partitions_for_topic, lambda t, p: _replica_racks(cluster, t, p))
        result = self.core.assign(view, subs)
        return {member: consumer_protocol.encode_assignment(a) for member, a in result.items()}

    def on_assignment(self, assignment: Any, generation: int) -> None:
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
        self.core.on_assignment(partitions, generation)


def _subscription(member: Any) -> Subscription:
    """A JoinGroup member (``metadata`` decoded by kafka-python, or raw bytes) as Java's
    ``Subscription``, with ``group_instance_id`` from the member entry."""
    instance_id = getattr(member, "group_instance_id", None) or None
    metadata = member.metadata
    if isinstance(metadata, (bytes, bytearray, memoryview)):
        sub = consumer_protocol.decode_subscription(bytes(metadata))
        return Subscription(sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id,
                            instance_id)
    owned = tuple(
        TopicPartition(entry.topic, p) for entry in (getattr(metadata, "owned_partitions", None) or ())
        for p in entry.partitions
    )
    generation = getattr(metadata, "generation_id", -1)
    user_data = metadata.user_data
    return Subscription(
        topics=tuple(metadata.topics),
        user_data=None if user_data is None else bytes(user_data),
        owned_partitions=owned,
        generation_id=generation if generation is not None and generation >= 0 else None,
        rack_id=getattr(metadata, "rack_id", None) or None,
        group_instance_id=instance_id,
    )


def _replica_racks(cluster: Any, topic: str, partition: int) -> tuple[str | None, ...]:
    """Racks of a partition's replicas from the leader's metadata (``None`` for a rack-less
    or unknown broker). kafka-python keeps replicas only in its metadata cache."""
    partitions = getattr(cluster, "_partitions", {}).get(topic, {})
    meta = partitions.get(partition)
    replicas = getattr(meta, "replica_nodes", None) or getattr(meta, "replicas", None) or ()
    racks: list[str | None] = []
    for node_id in replicas:
        broker = cluster.broker_metadata(node_id)
        racks.append(getattr(broker, "rack", None) if broker is not None else None)
    return tuple(racks)


def kafka_python_assignor(name: str, *, rack_id: str | None = None,
                          cooperative: bool | None = None) -> type[KafkaPythonAssignor]:
    """A class for ``partition_assignment_strategy`` running our ``name`` assignor.

    ``cooperative`` defaults to True for ``cooperative-sticky`` (owned partitions kept and sent
    across rebalances) and False otherwise; set it to match the protocol kafka-python picks.
    """
    if name not in ADAPTED:
        raise ValueError(f"no adapter for assignor {name!r}; choose one of {ADAPTED}")
    coop = name == "cooperative-sticky" if cooperative is None else cooperative
    attrs = {"name": name, "options": AdapterOptions(rack_id=rack_id, cooperative=coop),
             "__module__": __name__}
    return type(f"KafkaPython[{name}]", (KafkaPythonAssignor,), attrs)


class KafkaPythonRangeAssignor(KafkaPythonAssignor):
    name = "range"


class KafkaPythonRoundRobinAssignor(KafkaPythonAssignor):
    name = "roundrobin"


class KafkaPythonStickyAssignor(KafkaPythonAssignor):
    name = "sticky"


class KafkaPythonCooperativeStickyAssignor(KafkaPythonAssignor):
    name = "cooperative-sticky"
    options = AdapterOptions(cooperative=True)
