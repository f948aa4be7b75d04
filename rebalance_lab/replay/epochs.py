"""KIP-848 (``consumer`` protocol) groups: their events folded into one generation per group epoch
(spec/replay-inputs.md §2.4, §4.3, §6.5, §7.3; spec/coordinator.md §17).

A consumer group has no JoinGroup/SyncGroup barrier. The coordinator bumps the **group epoch**
when the membership, a subscription or the subscribed topics' metadata change, computes the
target assignment of the new epoch, and each member then **reconciles** on its own heartbeats:
it first revokes what the target takes from it (state ``UNREVOKED_PARTITIONS``, still at its
old epoch), then moves to the new epoch and receives the partitions the others have released
(``UNRELEASED_PARTITIONS`` until all have come, then ``STABLE``). One epoch is one rebalance,
over when every member is ``STABLE`` at it. Each epoch becomes a
:class:`~rebalance_lab.replay.timeline.Generation` numbered by the epoch (``kip848`` set):

* ``t_prepare``: the epoch's bump, a ``Bumped group epoch to E`` line or a
  ConsumerGroupMetadata record. Kafka writes the bump **without logging it** when it fences a
  member (a leave heartbeat, a session or rebalance timeout: ``consumerGroupFenceMember``), so
  in a broker log the departure of a known member starts epoch *current + 1* at its time (Kafka
  4.4 logs that bump, which then lands on the same epoch; an offsets dump writes the epoch record
  itself, and a static replacement writes none);
* ``t_join_done``: its target assignment computed (``Computed a new target assignment for
  epoch E``, or the target-assignment metadata record); the assignor named there is its protocol,
  else the one the members asked for (``serverAssignor``);
* ``t_sync_done``: the time the last of its members reported ``STABLE`` at epoch E (the
  ``new assignment state`` line, DEBUG in 4.x and INFO in 3.8-3.9; 3.7's ``transitioned`` line;
  the current-assignment record), when every member did;
* members: those in the group when the epoch began (joins and member-metadata records, leaves,
  fences, static replacements; a static member that left *temporarily* stays, its assignment is
  kept for it), plus any member that recorded a state at that epoch, in member-id order (the
  protocol has no JoinGroup order), each with the partitions of its first ``STABLE`` state at E;
* ``reconciled``: True as above (a member's state without partitions, such as a client's own
  ``transitioned … to STABLE`` line, counts; its assignment stays unknown); False when a member
  that did not reach E recorded a state between the epoch's start and the next epoch's (a newer
  epoch overtook it, or the data ends mid-way), or states at epochs before and after E (it went
  past it): it merges into the next episode like an interrupted classic generation; None (unknown)
  otherwise (4.x INFO logs, compacted dumps, client logs of some members only).

The trigger is the membership change that started the epoch (a join, a subscription update, a
leave or a fence with its reason); a bump with none before it was a metadata change.

Partition times for ``partition_moves`` come from the members' own states
(:meth:`EpochFold.partition_times`): a partition is revoked when it leaves a member's
assigned-or-pending-revocation set, or the member departs, and assigned when it enters the
member's assigned set. The unowned time of a partition is what KIP-848 calls unavailability:
from its revocation by one member to its assignment to the next (§7.3).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from rebalance_lab.replay.generation import (
    TP,
    Event,
    Generation,
    Member,
    PartitionTimes,
    Timeline,
    member_row,
    merged,
    tps,
)

LOG_SOURCES = frozenset({"broker_log", "client_log", "emulator"})
STABLE = "STABLE"
METADATA_CHANGE = "metadata_change"
INSTANCE_KEY = "instance:"  # the partition times of a static member, under its group.instance.id
#: How long after a membership change its bump may come: the coordinator writes both in one batch (the log lines
#: are a few milliseconds apart); an older change did not cause the bump.
CAUSE_WINDOW_US = 1_000_000
#: Why a membership event bumps the epoch (a fence carries its own reason code).
_CAUSES = {"MEMBER_JOINED": "member_join", "MEMBER_LEFT": "member_leave", "K848_MEMBER_LEFT": "member_leave"}


@dataclass(slots=True)
class State:
    """One member's reported assignment state (a ``K848_MEMBER_STATE`` event)."""

    ts: int
    epoch: int
    stable: bool
    assigned: frozenset[TP] | None  # None: the record names no partitions (3.7's transition line)
    owned: frozenset[TP] | None  # assigned or pending revocation: what the member still holds


@dataclass(slots=True)
class _Epoch:
    g: Generation
    members: dict[str, Member]  # membership when the epoch began
    start: int  # its first evidence (the window of its states begins there)


class EpochFold:
    """The KIP-848 part of one group's fold: called per event, then :meth:`finish` once."""

    def __init__(self, timeline: Timeline, current: dict[str, Member]) -> None:
        self.timeline = timeline
        self.current = current  # the membership the timeline fold keeps (member id -> member), read only here
        self.epoch = 0  # the newest epoch known so far
        self.epochs: dict[int, _Epoch] = {}
        self.states: dict[str, list[State]] = {}
        self.departures: dict[str, int] = {}  # member id -> when it left the group
        self.cause: tuple[str, str | None, int] | None = None  # (code, member, ts): the last membership change
        self.assignors: dict[str, str] = {}  # member id -> the server assignor it asked for
        self.subscribed: dict[str, set[str]] = {}  # member id -> every topic name it subscribed to
        self.opening: tuple[int, str | None] | None = None  # (first epoch, its joiner): the group may begin there
        self.last_departure: tuple[Member, int] | None = None  # the last member that left, and when

    # -- events ----------------------------------------------------------------------------------------------------

    def generation(self, number: int, e: Event) -> Generation:
        """Epoch ``number``'s generation, created with the membership of now on its first evidence."""
        g = self.timeline.generation(number, e)
        g.kip848 = True
        if g.protocol_type is None:
            g.protocol_type = e.get("protocol_type") or "consumer"
        if e.get("source") in LOG_SOURCES:
            g.has_log = True
        else:
            g.has_snapshot = True
        known = self.epochs.get(number)
        if known is None:
            self.epochs[number] = _Epoch(g, dict(self.current), e["ts"])
        elif e["ts"] < known.start:
            known.start = e["ts"]
        self.epoch = max(self.epoch, number)
        return g

    def bump(self, e: Event) -> None:
        number = e.get("generation")
        if number is None or number <= 0:
            return
        self._start(self.generation(number, e), e)

    def _start(self, g: Generation, e: Event) -> None:
        if g.t_prepare is None or e["ts"] < g.t_prepare:
            g.t_prepare, g.prepare = e["ts"], e
        cause, self.cause = self.cause, None
        if cause is not None and e["ts"] - cause[2] > CAUSE_WINDOW_US:
            cause = None  # Kafka writes a bump with the change that caused it: this one had another cause
        if cause is not None and cause[0] == "member_join" and len(self.epochs) == 1:
            self.opening = (g.generation, cause[1])
        code = e.get("reason_code") or (cause[0] if cause is not None else None)
        if code is None and not g.trigger_codes:
            code = METADATA_CHANGE  # a bump after no membership change (another source may have said why already)
        if code is not None and code not in g.trigger_codes:
            g.trigger_codes.append(code)
        if g.trigger_member is None:
            g.trigger_member = e.get("member_id") or (cause[1] if cause is not None else None)

    def target(self, e: Event) -> None:
        number = e.get("generation")
        if number is None or number <= 0:
            return
        g = self.generation(number, e)
        if g.t_join_done is None or e["ts"] < g.t_join_done:
            g.t_join_done = e["ts"]
        if e.get("protocol"):
            g.protocol = e["protocol"]

    def state(self, e: Event) -> None:
        member_id, epoch = e.get("member_id"), e.get("generation")
        if not member_id or epoch is None:
            return
        assigned = _tps(e.get("partitions"))
        pending = _tps(e.get("partitions_pending_revocation"))
        owned = assigned | pending if assigned is not None and pending is not None else assigned
        stable = (e.get("raw") or "").upper() == STABLE
        self.states.setdefault(member_id, []).append(State(e["ts"], epoch, stable, assigned, owned))
        if epoch > 0:
            self.generation(epoch, e)

    def joined(self, e: Event, previous: Member | None) -> None:
        """A member joined, or (``previous``: it was in the group) maybe updated its subscription or rack; the
        same member seen again unchanged is another source's record of the same fact."""
        member_id = e.get("member_id")
        subscription = e.get("subscription") or {}
        topics = subscription.get("topics")
        self._note(e)
        if previous is None:
            self.cause = ("member_join", member_id, e["ts"])
            return
        rack = e.get("rack_id") or subscription.get("rack")
        # (a join line names no topics: the first subscription learned of a member is not a change)
        if (topics is not None and previous.topics is not None and tuple(topics) != previous.topics) or (
                rack is not None and previous.rack_id is not None and rack != previous.rack_id):
            self.cause = ("member_metadata_change", member_id, e["ts"])

    def replacing(self, e: Event) -> str | None:
        """The member a joining static member replaces, when ``e`` is the second half of a replacement in an
        offsets dump: there the new member's record comes in the same batch as the deletion of the old member with
        the same instance id, and no epoch record (the log says ``re-joins … to replace``, which is a
        STATIC_MEMBER_REPLACED event of its own)."""
        instance = e.get("group_instance_id")
        if instance is None or self.last_departure is None:
            return None
        old, at = self.last_departure
        if old.group_instance_id != instance or e["ts"] - at > CAUSE_WINDOW_US:
            return None
        self.last_departure = None
        self.cause = None  # a replacement bumps nothing
        self._note(e)
        return old.member_id

    def _note(self, e: Event) -> None:
        """What a member record says that outlives the membership: its topics and the assignor it asked for."""
        member_id = e.get("member_id")
        if not member_id:
            return
        if e.get("protocol"):
            self.assignors[member_id] = e["protocol"]
        topics = (e.get("subscription") or {}).get("topics")
        if topics:
            self.subscribed.setdefault(member_id, set()).update(topics)

    def departed(self, e: Event, member: Member | None) -> None:
        """A member left or was fenced (``member``: as it was known, None if it was not in the group); in a broker
        log that bumps the epoch without a line of its own (Kafka 4.0; 4.4 logs it)."""
        member_id = e.get("member_id")
        if member is None or not member_id:
            return
        self.departures.setdefault(member_id, e["ts"])
        self.last_departure = (member, e["ts"])
        code = e.get("reason_code") or _CAUSES.get(e["event_type"], "member_leave")
        self.cause = (code, member_id, e["ts"])
        if e.get("source") in LOG_SOURCES and self.epoch > 0:
            self._start(self.generation(self.epoch + 1, e), e)

    # -- the end of the fold ---------------------------------------------------------------------------------------

    def finish(self) -> None:
        """Every epoch's members, assignments and reconciliation (see the module docstring)."""
        names = self.topic_names()
        if names:
            self.states = {m: [_renamed(s, names) for s in states] for m, states in self.states.items()}
        numbers = sorted(self.epochs)
        for i, number in enumerate(numbers):
            following = self.epochs[numbers[i + 1]].start if i + 1 < len(numbers) else None
            self._reconcile(self.epochs[number], following)

    def _reconcile(self, epoch: _Epoch, following: int | None) -> None:
        g = epoch.g
        number = g.generation
        members = dict(epoch.members)
        directory = self.timeline.directory
        for member_id, states in self.states.items():
            # a member no join, leave or replacement named (the data began after it joined), seen in a state at E
            if member_id not in directory and any(s.epoch == number for s in states):
                members[member_id] = Member(member_id)
        if self.opening is not None and self.opening[0] == number and list(members) == [self.opening[1]]:
            g.from_empty = True  # its first member's join: the group had nobody before (no transition into it)
        reached = {m: self._stable_at(m, number) for m in members}
        if all(s is not None for s in reached.values()):
            g.reconciled = True
            times = [s.ts for s in reached.values() if s is not None]
            g.t_sync = max(times) if times else g.t_prepare or g.t_join_done or epoch.start
            g.empty = not members
        elif any(reached[m] is None and self._missed(m, number, epoch.start, following) for m in members):
            g.reconciled = False
        g.members = [_copy(members[m], directory.get(m), reached[m]) for m in sorted(members)]
        g.member_rows = [member_row(m) for m in g.members]
        g.members_from = "epochs"
        g.n_members = len(g.members)
        g.n_static = sum(1 for m in g.members if m.group_instance_id is not None)
        if g.protocol is None:
            asked = {self.assignors[m] for m in members if m in self.assignors}
            g.protocol = asked.pop() if len(asked) == 1 else None

    def _stable_at(self, member_id: str, number: int) -> State | None:
        for s in self.states.get(member_id, ()):
            if s.epoch == number and s.stable:
                return s
        return None

    def _missed(self, member_id: str, number: int, start: int, end: int | None) -> bool:
        """Whether ``member_id``, which has no STABLE state at epoch ``number``, provably never reconciled to it:
        it recorded a state while the epoch lasted (from ``start`` until ``end``), or states at epochs before and
        after it (it went past it). Without either its states may just not have been recorded, or have been
        compacted away, or be in another member's client log."""
        hi = end if end is not None else 1 << 62
        states = self.states.get(member_id, ())
        if any(start <= s.ts < hi for s in states):
            return True
        return any(0 < s.epoch < number for s in states) and any(s.epoch > number for s in states)

    def topic_names(self) -> dict[str, str]:
        """Topic id -> name, where the members' subscriptions leave one name for an id.

        Since Kafka 4.1 no coordinator record or line pairs a topic's id with its name (the
        partition-metadata record gave way to a hash, KIP-1101), yet states list partitions by id
        and subscriptions by name. A partition a member held is of a topic it subscribed to, so an
        id's candidates are the names every member that held it subscribed to; an id left with one
        name no other id is left with is that topic. (Identical multi-topic subscriptions stay ids.)
        """
        named = set().union(*self.subscribed.values()) if self.subscribed else set()
        candidates: dict[str, set[str]] = {}
        for member_id, states in self.states.items():
            subscribed = self.subscribed.get(member_id)
            if not subscribed:
                continue
            for s in states:
                for topic in {tp[0] for tp in s.owned or ()} - named:
                    found = candidates.get(topic)
                    candidates[topic] = set(subscribed) if found is None else found & subscribed
        chosen = {topic: next(iter(names)) for topic, names in candidates.items() if len(names) == 1}
        taken = Counter(chosen.values())
        return {topic: name for topic, name in chosen.items() if taken[name] == 1}

    def partition_times(self) -> PartitionTimes:
        """When each member's states show it gave up and got each partition (see the module docstring)."""
        times = PartitionTimes()
        for member_id, states in self.states.items():
            # a static member's successor (a new member id) carries on with its partitions: known by its instance too
            known = self.timeline.directory.get(member_id)
            instance = known.group_instance_id if known is not None else None
            keys = (member_id, f"{INSTANCE_KEY}{instance}") if instance is not None else (member_id,)
            owned: frozenset[TP] = frozenset()
            assigned: frozenset[TP] = frozenset()
            for s in states:  # in time order: the fold reads the events sorted by time
                if s.assigned is None or s.owned is None:
                    continue
                times.add(times.revoked, keys, owned - s.owned, s.ts)
                times.add(times.assigned, keys, s.assigned - assigned, s.ts)
                owned, assigned = s.owned, s.assigned
            left = self.departures.get(member_id)
            if left is not None:
                times.add(times.revoked, keys, owned, left)
        return times


def _tps(values: list[dict[str, Any]] | None) -> frozenset[TP] | None:
    found = tps(values)
    return None if found is None else frozenset(found)


def _renamed(state: State, names: dict[str, str]) -> State:
    def rename(tps: frozenset[TP] | None) -> frozenset[TP] | None:
        return None if tps is None else frozenset((names.get(t, t), p) for t, p in tps)

    return State(state.ts, state.epoch, state.stable, rename(state.assigned), rename(state.owned))


def _copy(then: Member, learned: Member | None, reached: State | None) -> Member:
    """The member as this epoch has it: as it was when the epoch began, completed by what was learned of it
    later (another source may name its client after the line that began the epoch), with its assignment at the
    epoch if it reached it."""
    member = merged(then, learned if learned is not None else then)
    if reached is not None and reached.assigned is not None:
        member.assignment = tuple(sorted(reached.assigned))
    return member
