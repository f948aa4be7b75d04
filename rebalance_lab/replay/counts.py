"""Partition counts per topic at a moment: ``TOPIC_METADATA`` first, else inferred (spec §7.4).

A cluster's ``TOPIC_METADATA`` events are the same list for every group of that cluster
(the Spark pipeline broadcasts it), so the index over them is built once per list and
reused: :func:`index_for` keeps the last list it indexed, compared by identity.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any

# The most partitions of one topic the what-if builds. Kafka 4.4.0's controller creates at most 10,000 partitions
# per CreateTopics request and adds at most 10,000 per CreatePartitions request (ReplicationControlManager
# .validateTotalNumberOfPartitions, POLICY_VIOLATION; QuorumController.MAX_RECORDS_PER_USER_OP): a topic grows past
# that only through more requests, and a partition id is any int32. An input naming partition 2147483000 would make
# every round build that many partitions (a hang, then memory exhausted); past this bound the counts are left out
# and the generation's what-if is unknown, with the reason (whatif.py), instead.
MAX_WHATIF_PARTITIONS = 100_000


class TopicCounts:
    """``topic -> [(ts, count)]`` sorted by time; a count of 0 means the topic was deleted."""

    def __init__(self, topic_events: Iterable[dict[str, Any]]) -> None:
        changes: dict[str, list[tuple[int, int]]] = {}
        for event in topic_events:
            counts = event.get("topic_partitions")
            if not counts:
                continue
            items = counts.items() if isinstance(counts, Mapping) else counts
            for topic, count in items:
                changes.setdefault(topic, []).append((event["ts"], int(count)))
        self._times: dict[str, list[int]] = {}
        self._counts: dict[str, list[int]] = {}
        for topic, rows in changes.items():
            rows.sort()
            self._times[topic] = [ts for ts, _ in rows]
            self._counts[topic] = [count for _, count in rows]

    def at(self, topic: str, ts: int) -> int | None:
        """The latest count at or before ``ts``; None if the metadata says nothing yet."""
        times = self._times.get(topic)
        if times is None:
            return None
        i = bisect_right(times, ts)
        return self._counts[topic][i - 1] if i else None


_last: tuple[object, TopicCounts] | None = None


def index_for(topic_events: list[dict[str, Any]]) -> TopicCounts:
    """The index of ``topic_events``, reused while the caller passes the same list object."""
    global _last
    if _last is not None and _last[0] is topic_events:
        return _last[1]
    index = TopicCounts(topic_events)
    _last = (topic_events, index)
    return index


class Inferred:
    """The highest partition seen so far per topic (+1), from recorded assignments and owned lists."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self._added: dict[int, tuple[tuple[str, int], ...]] = {}

    def add(self, partitions: tuple[tuple[str, int], ...]) -> None:
        # A member usually keeps its list for many generations, as one shared tuple (the fold's PartitionLists):
        # a tuple already added adds nothing new. Recognised by identity, not hashed (the entry keeps it alive, so
        # its id is not reused); an equal tuple of its own is added again, to the same effect.
        if id(partitions) in self._added:
            return
        self._added[id(partitions)] = partitions
        seen = self.seen
        for topic, partition in partitions:
            if partition >= seen.get(topic, 0):
                seen[topic] = partition + 1


def counts_at(topics: Iterable[str], ts: int | None, metadata: TopicCounts, inferred: Inferred,
              too_large: dict[str, int] | None = None) -> dict[str, int]:
    """Partition count per topic as a leader would have seen it at ``ts``: the metadata's, raised to what
    the recorded assignments prove exists (a partition that was assigned exists). Topics with no count
    at all are left out, as Java's assignors skip topics without metadata; so are topics counted beyond
    :data:`MAX_WHATIF_PARTITIONS`, which go to ``too_large`` (topic -> count) when it is given."""
    result: dict[str, int] = {}
    for topic in topics:
        known = metadata.at(topic, ts) if ts is not None else None
        if known == 0:
            continue  # deleted at that time
        count = max(known or 0, inferred.seen.get(topic, 0))
        if count > MAX_WHATIF_PARTITIONS:
            if too_large is not None:
                too_large[topic] = count
        elif count > 0:
            result[topic] = count
    return result


def too_large_reason(too_large: dict[str, int]) -> str:
    """Why a generation's what-if is unknown: its topics counted beyond the bound (the first three named)."""
    named = ", ".join(f"{topic!r} ({count:,})" for topic, count in sorted(too_large.items())[:3])
    more = f" and {len(too_large) - 3} more" if len(too_large) > 3 else ""
    return (f"partition count beyond the what-if's bound of {MAX_WHATIF_PARTITIONS:,} per topic: {named}{more} "
            f"(a partition id that large is damaged input, or a topic too large to replay)")
