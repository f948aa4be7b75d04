"""Group-level subscription state computed with one member changed (``ModernGroup``/``ConsumerGroup``).

The heartbeat asks "what would the counts, the subscription type and the metadata hash be with
this member updated?" before any record is applied, as Kafka does
(``computeSubscribedTopicNames``, ``computeSubscribedRegularExpressions``, ``subscriptionType``,
``computeMetadataHash``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rebalance_lab.coordinator.consumer.assignors import SubscriptionType
from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, SubscriptionCount
from rebalance_lab.coordinator.consumer.topics import TopicsImage

Counts = dict[str, SubscriptionCount]


def names_with(group: ConsumerGroup, old: ConsumerMember | None, new: ConsumerMember | None) -> Counts:
    counts = {name: SubscriptionCount(c.by_name, c.by_regex) for name, c in group.subscribed_names.items()}
    if old is not None:
        _add(counts, old.subscribed_topic_names, -1)
        regex = old.subscribed_topic_regex
        if regex and regex != (new.subscribed_topic_regex if new else "") and group.num_subscribed_members(regex) == 1:
            resolved = group.resolved_regexes.get(regex)
            _add(counts, resolved.topics if resolved else (), 0, -1)
    if new is not None:
        _add(counts, new.subscribed_topic_names, 1)
    return counts


def names_without(group: ConsumerGroup, removed: Iterable[ConsumerMember], deleted_regexes: Iterable[str]) -> Counts:
    """``computeSubscribedTopicNamesWithoutDeletedMembers``."""
    counts = {name: SubscriptionCount(c.by_name, c.by_regex) for name, c in group.subscribed_names.items()}
    for member in removed:
        _add(counts, member.subscribed_topic_names, -1)
    for regex in deleted_regexes:
        resolved = group.resolved_regexes.get(regex)
        _add(counts, resolved.topics if resolved else (), 0, -1)
    return counts


def _add(counts: Counts, names: Iterable[str], by_name: int, by_regex: int = 0) -> None:
    for name in names:
        c = counts.setdefault(name, SubscriptionCount())
        c.by_name += by_name
        c.by_regex += by_regex
        if c.by_name <= 0 and c.by_regex <= 0:
            del counts[name]


def regexes_with(group: ConsumerGroup, old: ConsumerMember | None, new: ConsumerMember | None) -> dict[str, int]:
    counts = dict(group.subscribed_regexes)
    old_regex = old.subscribed_topic_regex if old else ""
    new_regex = new.subscribed_topic_regex if new else ""
    if old_regex != new_regex:
        if old_regex:
            counts[old_regex] = counts.get(old_regex, 0) - 1
        if new_regex:
            counts[new_regex] = counts.get(new_regex, 0) + 1
    return {r: n for r, n in counts.items() if n > 0}


def subscription_type(regexes: Mapping[str, int], names: Counts, num_members: int) -> SubscriptionType:
    """``ConsumerGroup.subscriptionType``: homogeneous when every member subscribes to the same names, or
    all use one regex and nothing else."""
    if not regexes:
        same = all(c.by_name == num_members for c in names.values())
        return SubscriptionType.HOMOGENEOUS if same else SubscriptionType.HETEROGENEOUS
    if next(iter(regexes.values())) != num_members:
        return SubscriptionType.HETEROGENEOUS
    if any(c.by_regex != 1 or c.by_name > 0 for c in names.values()):
        return SubscriptionType.HETEROGENEOUS
    return SubscriptionType.HOMOGENEOUS


def current_type(group: ConsumerGroup) -> SubscriptionType:
    return subscription_type(group.subscribed_regexes, group.subscribed_names, len(group.members))


def metadata_hash(names: Iterable[str], topics: TopicsImage) -> tuple[object, ...]:
    """KIP-1101's group hash, kept as what it covers: each subscribed existing topic's (id, name, partitions,
    racks), in name order. Kafka keeps a 64-bit hash of the same; only its changes are observable."""
    found = ((n, topics.get(n)) for n in sorted(names))
    return tuple(t.fingerprint for _, t in found if t is not None)


def shift_regex_topics(counts: Counts, old: Iterable[str], new: Iterable[str]) -> None:
    """A resolved regex's topics replaced: each regex counts its topics once."""
    _add(counts, old, 0, -1)
    _add(counts, new, 0, 1)
