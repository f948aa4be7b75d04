"""aiokafka ``partition_assignment_strategy`` entries backed by our Java-identical assignors.

    from rebalance_lab.clients.adapters.aiokafka import aiokafka_assignor
    AIOKafkaConsumer("orders", group_id="g", partition_assignment_strategy=[aiokafka_assignor("sticky")])

aiokafka does not instantiate what it is given: it calls ``metadata``/``assign``/
``on_assignment`` on the class or object itself. These adapters work both ways and keep their
state on whichever it is, so every instance, and every class made by
:func:`aiokafka_assignor`, is one member's state. Passing the *same* class or object to several
consumers in one process shares sticky state between them (aiokafka issue #1175): give each
consumer its own ``aiokafka_assignor(...)`` or ``AiokafkaStickyAssignor()``.

What crosses aiokafka's interface, and what does not:

* JoinGroup metadata: ``metadata(topics)`` returns Java's subscription v3 bytes, sent as is.
* Leader: aiokafka decodes member metadata with its v0 struct, so only topics and user data
  reach ``assign``; owned partitions, the protocol generation and ``client.rack`` are read by
  nobody, and ``group_instance_id`` is dropped (range/roundrobin order static members by member
  id). Members come in JoinGroup-response order. With eager protocols and no consumer racks
  Java needs nothing more: eager members own nothing at JoinGroup, and the sticky assignor
  reads ownership and generation from its user data.
* Assignment: aiokafka's ``ConsumerProtocolMemberAssignment`` at version 3; its bytes equal
  Java's ``serializeAssignment``.
* ``on_assignment(assignment)`` carries no generation, so the generation is unknown to the
  member: sticky user data says -1 (Java: the group generation) and the subscription's
  GenerationId is -1. No cooperative protocol: aiokafka is eager only, so there is no
  cooperative-sticky adapter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from rebalance_lab.clients.adapters._core import AdapterCore, AdapterOptions, cluster_view, grouped
from rebalance_lab.clients.assignors import Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import HIGHEST_VERSION

__all__ = [
    "AiokafkaAssignor",
    "AiokafkaRangeAssignor",
    "AiokafkaRoundRobinAssignor",
    "AiokafkaStickyAssignor",
    "aiokafka_assignor",
]

AIOKAFKA_ASSIGNORS = ("range", "roundrobin", "sticky")
R = TypeVar("R")
_STATE = "_rebalance_lab_core"


class _hybridmethod(Generic[R]):
    """Bound to the instance when looked up on one, to the class otherwise."""

    def __init__(self, func: Callable[..., R]) -> None:
        self._func = func

    def __get__(self, obj: object, owner: type) -> Callable[..., R]:
        return functools.partial(self._func, owner if obj is None else obj)


def _core(target: Any) -> AdapterCore:
    """The state of this class or instance (never inherited from a base class)."""
    core = vars(target).get(_STATE)
    if core is None:
        core = AdapterCore(target.name, target.options)
        setattr(target, _STATE, core)
    assert isinstance(core, AdapterCore)
    return core


class AiokafkaAssignor:
    """Base adapter; use a named subclass or :func:`aiokafka_assignor`."""

    name: ClassVar[str] = ""
    options: ClassVar[AdapterOptions] = AdapterOptions()

    @_hybridmethod
    def core(target: Any) -> AdapterCore:
        return _core(target)

    @_hybridmethod
    def metadata(target: Any, topics: Iterable[str]) -> bytes:
        return _core(target).subscription_bytes(topics, generation_known=False)

    @_hybridmethod
    def assign(target: Any, cluster: Any, members: Mapping[str, Any]) -> dict[str, Any]:
        subs = [(str(member_id), _subscription(md)) for member_id, md in members.items()]
        topics = {t for _, sub in subs for t in sub.topics}
        view = cluster_view(sorted(topics), cluster.partitions_for_topic, lambda t, p: _replica_racks(cluster, t, p))
        result = _core(target).assign(view, subs)
        return {
            member: ConsumerProtocolMemberAssignment(HIGHEST_VERSION, grouped(a.partitions), a.user_data)
            for member, a in result.items()
        }

    @_hybridmethod
    def on_assignment(target: Any, assignment: Any) -> None:
        partitions = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
        _core(target).on_assignment(partitions, -1)


def _subscription(metadata: Any) -> Subscription:
    """aiokafka's decoded ``ConsumerProtocolMemberMetadata`` (v0 fields only)."""
    user_data = metadata.user_data
    return Subscription(topics=tuple(metadata.subscription), user_data=None if user_data is None else bytes(user_data))


def _replica_racks(cluster: Any, topic: str, partition: int) -> tuple[str | None, ...]:
    partitions = getattr(cluster, "_partitions", {}).get(topic, {})
    meta = partitions.get(partition)
    racks: list[str | None] = []
    for node_id in getattr(meta, "replicas", None) or ():
        broker = cluster.broker_metadata(node_id)
        racks.append(getattr(broker, "rack", None) if broker is not None else None)
    return tuple(racks)


def aiokafka_assignor(name: str, *, rack_id: str | None = None) -> type[AiokafkaAssignor]:
    """A fresh class (its own member state) for ``partition_assignment_strategy``.

    ``rack_id`` is written into the subscription as Java's ``client.rack`` would be, but an
    aiokafka leader cannot read it back (see the module docstring)."""
    if name not in AIOKAFKA_ASSIGNORS:
        raise ValueError(f"no aiokafka adapter for {name!r}; choose one of {AIOKAFKA_ASSIGNORS}"
                         " (aiokafka has no cooperative rebalancing)")
    attrs = {"name": name, "options": AdapterOptions(rack_id=rack_id), "__module__": __name__}
    return type(f"Aiokafka[{name}]", (AiokafkaAssignor,), attrs)


class AiokafkaRangeAssignor(AiokafkaAssignor):
    name = "range"


class AiokafkaRoundRobinAssignor(AiokafkaAssignor):
    name = "roundrobin"


class AiokafkaStickyAssignor(AiokafkaAssignor):
    name = "sticky"
