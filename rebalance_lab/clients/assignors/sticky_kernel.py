"""The constrained sticky builder without racks, on int partition indices (issue 20).

Every what-if round of the replay's benchmark takes one path of the sticky ports: all subscriptions equal and no
member with a rack, so :class:`~rebalance_lab.clients.assignors.sticky_constrained.ConstrainedBuilder` runs with
``RackInfo`` off. This module is that builder's algorithm (``AbstractStickyAssignor.ConstrainedAssignmentBuilder``,
KAFKA-12464/KAFKA-16277) over ints instead of ``TopicPartition`` objects and member ids:

* partition ``k`` is the ``i``-th partition of the ``t``-th topic in Java ``String`` order of the names, numbered
  over that sorted list (``k`` = ``i`` + the partition counts of the topics before), so the all-partitions list the
  builder walks is ``0..total-1`` and "unassigned" is what is left of it in order;
* member ``j`` is the ``j``-th key of ``owned`` (the Java ``HashMap`` order the port iterates); the unfilled lists
  are sorted by each member's rank in Java ``String`` order of the ids, as ``Collections.sort`` sorts them;
* the kept order (partition number, then topic in Java order) is each partition's rank in that order over all
  partitions, so a member's kept list sorts as plain ints.

It gives the port's result exactly or ``None`` (then the caller runs the port, which stays the reference): for an
owned partition outside its topic's ``0..count-1`` or owned twice (where Java's merge walk can stall), metadata
whose ids are not ``0..count-1``, more than :data:`~rebalance_lab.clients.assignors.common.SHARED_PARTITIONS`
partitions, no member, and every run the port would end in an ``IllegalStateException``.
``tests/unit/assignors/test_sticky_kernel.py`` compares the two over thousands of random groups.
"""

from __future__ import annotations

from rebalance_lab.clients.assignors.common import (
    SHARED_PARTITIONS,
    PartitionIds,
    PartitionsPerTopic,
    shared_partitions,
)
from rebalance_lab.clients.assignors.java_hashmap import java_str_key
from rebalance_lab.clients.assignors.types import TopicPartition

Lists = dict[str, list[TopicPartition]]

_USUAL: list[int] = list(range(SHARED_PARTITIONS + 1))  # the ids 0..n-1 of a topic, as a slice to compare with


class _Layout:
    """The int numbering of one ``partitionsPerTopic``, made once and kept with it (it is never changed once
    made: the what-if's cluster view hands the same one to every round of a group)."""

    __slots__ = ("by_kept_rank", "counts", "firsts", "ids", "kept_rank", "partitions", "ppt", "topic_index")

    def __init__(self, ppt: PartitionsPerTopic, ids: PartitionIds, partitions: list[TopicPartition]) -> None:
        self.ppt = ppt  # held, so the identity the cache is keyed by stays this object's
        self.ids = ids
        self.partitions = partitions  # index -> TopicPartition (shared, immutable)
        # Partition i of the t-th topic (in Java order) is firsts[t] + i, for 0 <= i < counts[t]: read from a
        # TopicPartition with one lookup of its (hash-cached) topic string, not a hash of the tuple.
        topics = sorted(ppt, key=java_str_key)
        self.topic_index: dict[str, int] = {t: position for position, t in enumerate(topics)}
        self.counts: list[int] = [len(ppt[t]) for t in topics]
        self.firsts: list[int] = []
        first = 0
        for count in self.counts:
            self.firsts.append(first)
            first += count
        # KAFKA-16277 (3.8.0): owned partitions are kept in (partition number, topic) order. Each partition's
        # position in that order over all partitions, and back: a member's kept list sorts as plain ints.
        width = len(topics)
        keys = [0] * len(partitions)
        for k, tp in enumerate(partitions):
            keys[k] = tp.partition * width + topics.index(tp.topic)
        self.by_kept_rank: list[int] = sorted(range(len(partitions)), key=keys.__getitem__)
        self.kept_rank: list[int] = [0] * len(partitions)
        for rank, k in enumerate(self.by_kept_rank):
            self.kept_rank[k] = rank

    def number(self, tp: TopicPartition) -> int:
        """The partition's index, -1 if its topic is not in ``ppt`` or its number outside ``0..count-1``."""
        t = self.topic_index.get(tp[0], -1)
        if t < 0 or not 0 <= tp[1] < self.counts[t]:
            return -1
        return self.firsts[t] + tp[1]


_LAYOUTS: dict[int, _Layout] = {}  # by id(ppt); each entry holds its ppt
_LAYOUTS_KEPT = 256  # layouts held before the cache starts again


def _layout(ppt: PartitionsPerTopic, ids: PartitionIds) -> _Layout | None:
    """The numbering of ``ppt``'s partitions, ``None`` if a topic's ids are not ``0..count-1`` or there are more
    than the shared partitions' limit."""
    found = _LAYOUTS.get(id(ppt))
    if found is not None and found.ppt is ppt and found.ids is ids:
        return found
    for topic, metas in ppt.items():
        count = len(metas)
        topic_ids = ids[topic]
        if count > SHARED_PARTITIONS or len(topic_ids) != count or list(topic_ids) != _USUAL[:count]:
            return None
    topics = sorted(ppt, key=java_str_key)
    partitions = shared_partitions(topics, {t: range(len(ppt[t])) for t in topics})
    if partitions is None:
        return None
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        _LAYOUTS.clear()
    found = _LAYOUTS[id(ppt)] = _Layout(ppt, ids, partitions)
    return found


def constrained_without_racks(
    ppt: PartitionsPerTopic,
    ids: PartitionIds,
    owned: dict[str, list[TopicPartition]],
    multi_owned: set[TopicPartition],
) -> tuple[Lists, dict[TopicPartition, str]] | None:
    """``ConstrainedBuilder(...).build()`` and its ``transferring`` map with no rack anywhere, or ``None`` where
    this kernel does not answer (see the module's docstring)."""
    layout = _layout(ppt, ids)
    if layout is None or not owned:
        return None
    names = list(owned)
    kept = _kept_ranks(layout, names, owned)
    if kept is None:
        return None
    multi = [k for k in map(layout.number, multi_owned) if k >= 0]
    built = _build(layout, names, kept, multi)
    if built is None:
        return None
    lists, transferring = built
    tps = layout.partitions
    assignment: Lists = {name: [tps[k] for k in lists[j]] for j, name in enumerate(names)}
    return assignment, {tps[k]: names[j] for k, j in transferring.items()}


def _kept_ranks(layout: _Layout, names: list[str], owned: dict[str, list[TopicPartition]]) -> list[list[int]] | None:
    """Each member's owned partitions as kept-order ranks, sorted; ``None`` if one is unknown or owned twice."""
    kept_rank = layout.kept_rank
    seen = [False] * len(kept_rank)
    out: list[list[int]] = []
    for name in names:
        mine: list[int] = []
        for tp in owned[name]:
            k = layout.number(tp)
            if k < 0 or seen[k]:
                return None
            seen[k] = True
            mine.append(kept_rank[k])
        mine.sort()
        out.append(mine)
    return out


class _Rounds:
    """The builder's state over ints: member ``j``'s list, the unfilled lists and the over-quota count."""

    __slots__ = ("current_over", "exact", "expected_over", "lists", "max_quota", "min_quota", "revoked_from", "under")

    def __init__(self, total: int, members: int) -> None:
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_over = total % members
        self.current_over = 0
        self.lists: list[list[int]] = [[] for _ in range(members)]
        self.revoked_from: list[int] = [-1] * total  # maybeRevokedPartitions: partition -> member
        self.under: list[int] = []  # unfilledMembersWithUnderMinQuotaPartitions
        self.exact: list[int] = []  # unfilledMembersWithExactlyMinQuotaPartitions

    def keep(self, j: int, kept: list[int], taken: list[bool]) -> None:
        """``_keep_owned`` after the sort: up to min/maxQuota kept (marked ``taken``), the surplus maybe revoked."""
        held = len(kept)
        if held < self.min_quota:
            count = held
            self.under.append(j)
        elif held >= self.max_quota and self.current_over < self.expected_over:
            self.current_over += 1
            if self.current_over == self.expected_over:
                self.exact.clear()
            count = self.max_quota
        else:
            count = self.min_quota
            if self.current_over < self.expected_over:
                self.exact.append(j)
        for k in kept[count:]:
            self.revoked_from[k] = j
        del kept[count:]
        for k in kept:
            taken[k] = True
        self.lists[j].extend(kept)


def _build(
    layout: _Layout, names: list[str], kept_ranks: list[list[int]], multi: list[int]
) -> tuple[list[list[int]], dict[int, int]] | None:
    """``build()`` from the kept partitions on: each member's list and the transfers (partition -> member), or
    ``None`` where Java throws."""
    total = len(layout.partitions)
    rounds = _Rounds(total, len(names))
    by_kept_rank = layout.by_kept_rank
    is_multi = [False] * total
    for k in multi:
        is_multi[k] = True
    taken = [False] * total
    for j, ranks in enumerate(kept_ranks):
        kept = [by_kept_rank[r] for r in ranks]
        if multi:
            kept = [k for k in kept if not is_multi[k]]
        rounds.keep(j, kept, taken)
    if len(rounds.under) > 1 or len(rounds.exact) > 1:
        java_keys = [java_str_key(name) for name in names]  # Collections.sort: Java String order
        rounds.under.sort(key=java_keys.__getitem__)
        rounds.exact.sort(key=java_keys.__getitem__)
    transferring: dict[int, int] = {}
    if not _round_robin(rounds, taken, is_multi, transferring):
        return None
    if rounds.under and not _filled(rounds):
        return None
    return rounds.lists, transferring


def _round_robin(rounds: _Rounds, taken: list[bool], is_multi: list[bool], transferring: dict[int, int]) -> bool:
    """The port's ``_round_robin`` over the unassigned partitions in index order; ``False`` where Java throws."""
    under, exact, lists, revoked_from = rounds.under, rounds.exact, rounds.lists, rounds.revoked_from
    min_quota, max_quota = rounds.min_quota, rounds.max_quota
    it, last = 0, -1  # the iterator over ``under``: next index, index of its last returned element
    for k in range(len(taken)):
        if taken[k]:
            continue
        if it < len(under):
            j, last, it = under[it], it, it + 1
        elif not under and not exact:
            return False  # "No more unfilled consumers to be assigned."
        elif not under:
            j = exact.pop(0)
        else:
            j, last, it = under[0], 0, 1
        held = lists[j]
        held.append(k)
        was = revoked_from[k]
        if (was >= 0 and was != j) or is_multi[k]:
            transferring[k] = j
        count = len(held)
        if count == min_quota:
            if last < 0:
                return False  # iterator remove() without next()
            del under[last]
            it, last = it - 1, -1
            exact.append(j)
        elif count == max_quota:
            rounds.current_over += 1
    return True


def _filled(rounds: _Rounds) -> bool:
    """``_verify_unfilled`` when members are left under minQuota: ``False`` where Java throws."""
    if rounds.current_over != rounds.expected_over:
        return False
    return all(len(rounds.lists[j]) == rounds.min_quota for j in rounds.under)
