"""Partition ownership from one completed generation to the next: ``partition_moves`` rows and
the unavailability (``unowned_partition_ms``) of each episode (spec/replay-inputs.md §7.2, §7.3).

Owners are compared by :attr:`~rebalance_lab.replay.timeline.Member.key` (the group.instance.id
of a static member, else the member id), so a static member replaced under a new member id
keeps its partitions without a "move". A row is written for every partition whose owner
changed between consecutive completed generations with known assignments:

* ``A -> B``: ``moved`` is true when B differs from A and A is still in the group (a departed
  member's partitions are handed over, not moved, §7.3);
* ``A -> none``: A gave the partition up and nobody got it yet (the cooperative protocol
  withholds it for one generation, §7.4), so the next generation's row ``A -> B`` carries the
  revoke time;
* ``none -> B``: a partition nobody owned before (a new partition).

Unchanged partitions get no row, and neither does the group's first generation (no transition).
Times: ``revoked_at`` is the old owner's client-log revoke (``CLIENT_PARTITIONS_REVOKED``/``LOST``),
or in a KIP-848 group the state in which the coordinator saw it give the partition up, when there is
one; otherwise the episode start for the eager protocol or a departed owner, and the withholding
generation's sync for a cooperative hand-over. ``assigned_at`` is the new owner's
``CLIENT_PARTITIONS_ASSIGNED`` (or the KIP-848 state that first lists it), else the sync of the
generation that assigned it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.replay.epochs import INSTANCE_KEY
from rebalance_lab.replay.generation import PartitionTimes
from rebalance_lab.replay.rows import TupleRows
from rebalance_lab.replay.timeline import TP, Event, Generation, Member, Owners

_INF = 1 << 62
#: The ``partition_moves`` columns, the order of each row's tuple (:data:`.tables.PARTITION_MOVES`).
COLUMNS = ("cluster_id", "group_id", "generation", "topic", "partition", "owner_before", "owner_after", "moved",
           "revoked_at", "assigned_at", "gap_ms")


class ClientTimes:
    """Each member's own revoke and assign times per partition: from client logs, and from the states a
    KIP-848 coordinator recorded for its members (``states``, :meth:`.epochs.EpochFold.partition_times`)."""

    def __init__(self, events: Iterable[Event], states: PartitionTimes | None = None) -> None:
        self.revoked: dict[tuple[str, TP], list[int]] = {}
        self.assigned: dict[tuple[str, TP], list[int]] = {}
        if states is not None:
            for mine, theirs in ((self.revoked, states.revoked), (self.assigned, states.assigned)):
                for key, times in theirs.items():
                    mine.setdefault(key, []).extend(times)
        for e in events:
            who = e.get("member_id") or (f"client:{e['client_id']}" if e.get("client_id") else None)
            if who is None:
                continue
            table = self.assigned if e["event_type"] == "CLIENT_PARTITIONS_ASSIGNED" else self.revoked
            for tp in e.get("partitions") or ():
                table.setdefault((who, (tp["topic"], tp["partition"])), []).append(e["ts"])
        for times in (*self.revoked.values(), *self.assigned.values()):
            times.sort()

    def __bool__(self) -> bool:
        return bool(self.revoked or self.assigned)

    @staticmethod
    def _keys(m: Member) -> tuple[str, ...]:
        keys = (m.member_id, f"client:{m.client_id}") if m.client_id else (m.member_id,)
        # a static member's times, whichever of its member ids (process restarts) recorded them
        return (*keys, f"{INSTANCE_KEY}{m.group_instance_id}") if m.group_instance_id is not None else keys

    def revoke(self, m: Member, tp: TP, lo: int, hi: int) -> int | None:
        """The owner's latest revoke of ``tp`` in ``[lo, hi]``."""
        best = None
        for key in self._keys(m):
            times = self.revoked.get((key, tp))
            if times:
                i = bisect_right(times, hi)
                if i and times[i - 1] >= lo and (best is None or times[i - 1] > best):
                    best = times[i - 1]
        return best

    def assign(self, m: Member, tp: TP, lo: int, hi: int) -> int | None:
        """The new owner's first assign of ``tp`` in ``[lo, hi)``."""
        best = None
        for key in self._keys(m):
            times = self.assigned.get((key, tp))
            if times:
                i = bisect_left(times, lo)
                if i < len(times) and times[i] < hi and (best is None or times[i] < best):
                    best = times[i]
        return best


@dataclass
class Transitions:
    """The result of one pass over the completed generations."""

    rows: TupleRows = field(default_factory=lambda: TupleRows(COLUMNS))
    unowned_ms: dict[int, float] = field(default_factory=dict)  # episode id -> partition-milliseconds
    known: set[int] = field(default_factory=set)  # episodes with a known transition into each generation


@dataclass
class _Ctx:
    base: dict[str, Any]
    starts: dict[int, int]  # episode id -> t_start
    times: ClientTimes
    out: Transitions


class _Step:
    """The transition into generation ``g`` from the previous completed generation ``prev``."""

    def __init__(self, ctx: _Ctx, g: Generation, prev: Generation, next_start: int) -> None:
        self.ctx, self.g, self.prev = ctx, g, prev
        self.times = ctx.times if ctx.times else None
        self.t_start = ctx.starts.get(g.episode_id or 0, g.t_prepare or g.t_join_done or 0)
        self.t_sync = g.t_sync_done or 0
        self.prev_sync = prev.t_sync_done or self.t_start
        self.window = (g.t_prepare or g.t_join_done or self.prev_sync, next_start)
        self.keys = {m.key for m in g.members or ()}
        self.unowned = 0.0
        self.cluster_id, self.group_id = ctx.base.get("cluster_id"), ctx.base.get("group_id")
        self.generation = g.generation
        self.append = ctx.out.rows.tuples.append

    def revoked_at(self, old: Member, tp: TP, released: dict[TP, int]) -> int:
        if tp in released:
            return released.pop(tp)
        found = self.times.revoke(old, tp, self.prev_sync, self.t_sync) if self.times else None
        return found if found is not None else self.t_start

    def assigned_at(self, new: Member, tp: TP) -> int:
        found = self.times.assign(new, tp, *self.window) if self.times else None
        return found if found is not None else self.t_sync

    def release_at(self, old: Member, tp: TP) -> int:
        """When ``old`` gave up a partition nobody got in this generation."""
        if self.g.cooperative and old.key in self.keys:
            found = self.times.revoke(old, tp, self.t_sync, self.window[1]) if self.times else None
            return found if found is not None else self.t_sync
        found = self.times.revoke(old, tp, self.prev_sync, self.t_sync) if self.times else None
        return found if found is not None else self.t_start

    def row(self, tp: TP, old: Member | None, new: Member | None, revoked: int | None,
            assigned: int | None) -> None:
        gap = (assigned - revoked) / 1000.0 if revoked is not None and assigned is not None else None
        self.append((
            self.cluster_id, self.group_id, self.generation, tp[0], tp[1],
            old.member_id if old else None, new.member_id if new else None,
            old is not None and new is not None and old.key != new.key and old.key in self.keys,
            revoked, assigned, gap,
        ))
        if gap is not None and old is not None:
            self.unowned += gap

    def handed(self, tp: TP, old: Member, new: Member, revoked: int, assigned: int) -> None:
        """:meth:`row` for a partition another member held (the common row, without its null checks)."""
        gap = (assigned - revoked) / 1000.0
        self.append((
            self.cluster_id, self.group_id, self.generation, tp[0], tp[1], old.member_id, new.member_id,
            old.key in self.keys, revoked, assigned, gap,
        ))
        self.unowned += gap

    def untimed(self, new: Member, assignment: tuple[TP, ...], last: Owners, released: dict[TP, int]) -> int:
        """The rows of ``new``'s partitions when there are no client logs (the common case), written here without
        :meth:`handed`'s per-partition calls: a partition handed over was revoked when it was released, else at the
        episode start, and assigned at the sync. Returns how many partitions ``new`` kept."""
        key, new_id, keys, owner_of, append = new.key, new.member_id, self.keys, last.get, self.append
        cluster_id, group_id, generation, t_start, t_sync = (
            self.cluster_id, self.group_id, self.generation, self.t_start, self.t_sync)
        kept = 0
        unowned = self.unowned  # added to row by row, as handed() does (float addition is not associative)
        usual_gap = (t_sync - t_start) / 1000.0  # of a partition revoked at the episode start (not released)
        for tp in assignment:
            old = owner_of(tp)
            if old is None:
                self.row(tp, None, new, None, t_sync)  # (no gap: unowned unchanged)
            elif old.key != key:
                if released and tp in released:
                    revoked = released.pop(tp)
                    gap = (t_sync - revoked) / 1000.0
                else:
                    revoked, gap = t_start, usual_gap
                append((cluster_id, group_id, generation, tp[0], tp[1], old.member_id, new_id, old.key in keys,
                        revoked, t_sync, gap))
                unowned += gap
            else:
                if released:
                    released.pop(tp, None)
                kept += 1
        self.unowned = unowned
        return kept

    def eager_unchanged(self, count: int, unchanged: list[tuple[TP, Member]]) -> None:
        """The eager protocol revokes everything: unchanged partitions were unowned too (no row)."""
        if self.times is None:
            self.unowned += count * (self.t_sync - self.t_start) / 1000.0
            return
        for tp, member in unchanged:
            revoked = self.times.revoke(member, tp, self.prev_sync, self.t_sync)
            assigned = self.times.assign(member, tp, *self.window)
            self.unowned += ((assigned or self.t_sync) - (revoked or self.t_start)) / 1000.0


def _step(step: _Step, owners: Owners, prev_owners: Owners, last: Owners,
          released: dict[TP, int]) -> None:
    # a member (by key) with exactly its previous list kept every partition: skip them in bulk
    previous = {m.key: m.assignment for m in step.prev.members or ()}
    listed = step.times is not None and not step.g.cooperative
    unchanged: list[tuple[TP, Member]] = []
    kept = 0
    row, handed, assigned_at, revoked_at = step.row, step.handed, step.assigned_at, step.revoked_at
    for new in step.g.members or ():
        assignment = new.assignment or ()
        key = new.key
        if previous.get(key) == assignment:
            kept += len(assignment)
            if listed:
                unchanged.extend((tp, new) for tp in assignment)
            continue
        if step.times is None:
            kept += step.untimed(new, assignment, last, released)
            continue
        for tp in assignment:
            old = last.get(tp)
            if old is None:
                row(tp, None, new, None, assigned_at(new, tp))
            elif old.key != key:
                handed(tp, old, new, revoked_at(old, tp, released), assigned_at(new, tp))
            else:
                released.pop(tp, None)
                kept += 1
                if listed:
                    unchanged.append((tp, new))
    _release(step, owners, prev_owners, released)
    if not step.g.cooperative:
        step.eager_unchanged(kept, unchanged)


def _release(step: _Step, owners: Owners, prev_owners: Owners, released: dict[TP, int]) -> None:
    """Rows for the partitions nobody owns any more (``A -> none``)."""
    if len(owners) >= len(prev_owners) and prev_owners.keys() <= owners.keys():
        return  # the common case, all still owned, checked without a Python-level loop
    for tp, old in prev_owners.items():  # in order (a set difference would not be deterministic)
        if tp in owners:
            continue
        at = step.release_at(old, tp)
        released[tp] = at
        step.row(tp, old, None, at, None)


def transitions(gens: list[Generation], base: dict[str, Any], starts: dict[int, int],
                times: ClientTimes) -> Transitions:
    """``partition_moves`` rows and partition-milliseconds without an owner, per episode."""
    ctx = _Ctx(base, starts, times, Transitions())
    prev: Generation | None = None
    prev_owners: Owners | None = None
    last: Owners = {}
    released: dict[TP, int] = {}
    numbers = {g.generation for g in gens}
    completed = [g for g in gens if g.completed]
    unknown: set[int] = set()
    for i, g in enumerate(completed):
        owners = g.owners()
        episode = g.episode_id or 0
        contiguous = prev is not None and (g.generation == prev.generation + 1
                                           or all(n in numbers for n in range(prev.generation + 1, g.generation)))
        if owners is not None and prev is not None and prev_owners is not None and contiguous:
            next_start = _next_start(completed, i)
            step = _Step(ctx, g, prev, next_start)
            _step(step, owners, prev_owners, last, released)
            ctx.out.unowned_ms[episode] = ctx.out.unowned_ms.get(episode, 0.0) + step.unowned
            ctx.out.known.add(episode)
        elif owners is not None and prev is None and (g.generation == 1 or g.from_empty):
            ctx.out.unowned_ms[episode] = 0.0  # the group's first assignment: no transition, no rows
            ctx.out.known.add(episode)
        else:
            unknown.add(episode)
            last, released = {}, {}
        if owners is not None:
            last.update(owners)
        prev, prev_owners = g, owners
    ctx.out.known -= unknown
    return ctx.out


def _next_start(completed: list[Generation], i: int) -> int:
    if i + 1 < len(completed):
        nxt = completed[i + 1]
        return nxt.t_prepare or nxt.t_join_done or nxt.t_sync_done or _INF
    return _INF
