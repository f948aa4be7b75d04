"""The JoinGroup protocol list of a consumer: one entry per assignor, in preference order.

Each entry's metadata is a ``ConsumerProtocolSubscription`` (spec assignors.md §1) written
with the Java writer rules by :mod:`rebalance_lab.protocol.consumer_protocol`. The
assignor-specific user data follows Java's assignors (assignors.md §1.8):

* ``sticky`` sends null until the member has had a first assignment, then its owned
  partitions and generation (``StickyAssignor.subscriptionUserData``);
* ``cooperative-sticky`` always sends its generation, -1 before the first assignment;
* every other assignor sends null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.protocol import consumer_protocol as cp

COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})


@dataclass(frozen=True)
class SubscriptionSpec:
    """What the member subscribes to; the parts that change per join are arguments below."""

    topics: tuple[str, ...]
    assignors: tuple[str, ...]
    version: int = cp.HIGHEST_VERSION
    rack_id: str | None = None


def user_data_for(
    assignor: str, owned: Sequence[TopicPartition], generation: int, has_assignment: bool
) -> bytes | None:
    if assignor == "sticky":
        return cp.encode_sticky_user_data(owned, generation) if has_assignment else None
    if assignor == "cooperative-sticky":
        return cp.encode_cooperative_user_data(generation if has_assignment else -1)
    return None


def build_protocols(
    spec: SubscriptionSpec,
    owned: Sequence[TopicPartition],
    generation: int,
    has_assignment: bool,
    *,
    last_assignment: Sequence[TopicPartition] | None = None,
    last_assignment_generation: int | None = None,
) -> tuple[tuple[str, bytes], ...]:
    """One (name, subscription bytes) per assignor. Java puts the generation into the
    subscription (v2+, KIP-792) and the owned partitions (v1+, KIP-429).

    The user data comes from what the assignor kept in ``onAssignment``: the last assignment
    received and its generation (``last_assignment``/``last_assignment_generation``, default
    ``owned``/``generation``). They differ from ``owned`` for an eager member, which has
    revoked everything before it joins (``StickyAssignor`` still sends its previous
    assignment), and from ``generation`` after a generation that was joined but never synced."""
    data_partitions = owned if last_assignment is None else last_assignment
    data_generation = generation if last_assignment_generation is None else last_assignment_generation
    entries: list[tuple[str, bytes]] = []
    for name in spec.assignors:
        subscription = Subscription(
            topics=spec.topics,
            user_data=user_data_for(name, data_partitions, data_generation, has_assignment),
            owned_partitions=tuple(owned),
            generation_id=generation if generation >= 0 else None,
            rack_id=spec.rack_id,
        )
        entries.append((name, cp.encode_subscription(subscription, spec.version)))
    return tuple(entries)


def is_cooperative(assignors: Sequence[str]) -> bool:
    """Java picks the rebalance protocol all configured assignors support
    (``ConsumerCoordinator`` constructor): COOPERATIVE only if every one of them does."""
    return bool(assignors) and all(name in COOPERATIVE_ASSIGNORS for name in assignors)
