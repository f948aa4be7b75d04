"""One group's events in causal order, folded into generations (spec/replay-inputs.md §6.5, §7.2).

The fold is keyed by the generation number, never by position, so evidence of one
generation from several sources (a broker log, a ``__consumer_offsets`` dump, client
logs, an emulator recording) merges into one :class:`Generation` whatever order the
lines arrived in:

* ``t_prepare``: the first ``REBALANCE_PREPARE`` that forms the generation. A prepare
  carries ``prev_generation`` (the broker line's "old generation") and forms
  ``prev_generation + 1``; an event without ``prev_generation`` is the emulator's
  older shape, whose ``generation`` *was* the old generation.
* ``t_join_done``: ``JOIN_COMPLETE`` (B2) or ``GROUP_EMPTY`` (B4), else a snapshot
  whose time is a ``currentStateTimestamp`` (``ts_kind == "current_state"``, §4.4).
* ``t_sync_done``: ``SYNC_LEADER_ASSIGNMENT`` (B3), else the ``GENERATION_SNAPSHOT``'s
  record time, else (an empty group) the join time.
* members, assignment, protocol and leader: the snapshot, else the leader's client log
  (``CLIENT_LEADER_ASSIGNMENT``), else the membership rebuilt from member events
  (without assignments).

Same-timestamp ties are broken by a causal rank (§6.5: leave/expiry, prepare, join,
stabilized, sync, empty), then by source and the source's own sequence.

A KIP-848 group's events (bumps, target assignments, member states, and its members' joins,
leaves and fences) are folded by :mod:`.epochs` into one generation per group epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rebalance_lab.replay.generation import (  # re-exported: the model's steps import them from here
    COOPERATIVE_PROTOCOLS,
    TP,
    Assignment,
    Event,
    Generation,
    Member,
    Owners,
    PartitionTimes,
    Timeline,
    member_row,
    merged,
    tps,
)
from rebalance_lab.replay.member_rows import MemberRow, member_tuple
from rebalance_lab.replay.membership import MembershipFold, is_departure, replaced_id

__all__ = ["COOPERATIVE_PROTOCOLS", "TP", "Assignment", "Event", "Generation", "Member", "Owners", "PartitionTimes",
           "Timeline", "fold", "is_departure", "member_row", "merged", "ordered", "replaced_id", "sort_key", "tps"]

#: Same-millisecond order (§6.5). Unlisted types (faults, KIP-848) sort with the membership events.
RANK: dict[str, int] = {
    "GROUP_LOADED": 0, "TOPIC_METADATA": 0,
    "MEMBER_LEFT": 1, "MEMBER_SESSION_EXPIRED": 1, "PENDING_MEMBER_EXPIRED": 1, "CLIENT_POLL_TIMEOUT": 1,
    "CLIENT_PARTITIONS_REVOKED": 1, "CLIENT_PARTITIONS_LOST": 1, "MEMBER_JOIN_REQUEST": 1, "MEMBER_JOINED": 1,
    "STATIC_MEMBER_REPLACED": 1, "STATIC_MEMBER_REJOINED": 1, "CLIENT_JOIN_START": 1,
    "REBALANCE_PREPARE": 2,
    "MEMBERS_DROPPED_NOT_REJOINED": 3,
    "JOIN_COMPLETE": 4, "CLIENT_JOINED": 4,
    "SYNC_LEADER_ASSIGNMENT": 5, "CLIENT_LEADER_ASSIGNMENT": 5,
    "GENERATION_SNAPSHOT": 6, "GROUP_EMPTY": 6, "CLIENT_SYNCED": 6,
    "CLIENT_PARTITIONS_ASSIGNED": 7,
    "GROUP_UNLOADED": 8, "GROUP_DEAD": 8,
    # KIP-848: a departure (whose bump may be silent), the bump, the target, the members' states
    "K848_MEMBER_LEFT": 1, "K848_MEMBER_FENCED": 1, "K848_EPOCH_BUMP": 2, "K848_TARGET_COMPUTED": 4,
    "K848_MEMBER_STATE": 5,
}
_DEFAULT_RANK = 1
_LOG_SOURCES = frozenset({"broker_log", "client_log", "emulator"})


def sort_key(event: Event) -> tuple[int, int, str, int, str, str]:
    """Time, causal rank, source, the source's sequence; then where it came from, so that the order
    is total (two files of one source both start at seq 1) and independent of the input order."""
    return (event["ts"], RANK.get(event["event_type"], _DEFAULT_RANK), event.get("source") or "",
            event.get("seq") or 0, event.get("source_ref") or "", event["event_type"])


def ordered(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=sort_key)


# --- conversions ----------------------------------------------------------------------------------------------------

class PartitionLists:
    """Each recorded partition list converted to :data:`TP` tuples once per fold.

    The parse shares one list object among the snapshot rows that record an equal list (a member
    usually keeps its assignment for several generations, and its next subscription's owned list is
    that assignment), and a group's unpickled events keep that sharing: about two lists in three
    arrive again. They are recognised by identity; each entry keeps its list alive, so an id is
    never reused while the cache exists. Equal lists also become one tuple object, which makes the
    model's many "kept exactly its list" comparisons cheap.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[int, tuple[list[dict[str, Any]], tuple[TP, ...]]] = {}

    def of(self, values: list[dict[str, Any]]) -> tuple[TP, ...]:
        found = self._seen.get(id(values))
        if found is not None:
            return found[1]
        converted = tuple([(v["topic"], v["partition"]) for v in values])
        self._seen[id(values)] = (values, converted)
        return converted

    def known(self, values: list[dict[str, Any]] | None) -> tuple[TP, ...] | None:
        """The tuple of ``values`` if it was already converted (else None: convert it when needed)."""
        found = self._seen.get(id(values)) if values is not None else None
        return found[1] if found is not None else None


def member_of(row: MemberRow, lists: PartitionLists | None = None) -> Member:
    """A snapshot's (or a leader's client log) MEMBER struct, a dict or a tuple (:mod:`.member_rows`); ``lists``
    shares the conversions of one fold."""
    if isinstance(row, tuple):
        return member_tuple(row)
    get = row.get
    topics = get("topics")
    assignment = get("assignment")
    owned = get("owned")
    instance = get("group_instance_id")
    member_id = row["member_id"]
    lists = lists if lists is not None else PartitionLists()
    return Member(
        member_id, instance, get("client_id"), get("client_host"), get("rack_id"), get("session_timeout_ms"),
        tuple(topics) if topics is not None else None, owned, get("generation"),
        lists.of(assignment) if assignment is not None else None,
        instance if instance is not None else member_id,
        lists.known(owned),  # the owned list is read lazily (Member.owned), but shared when already converted
    )


def prepare_target(event: Event) -> int | None:
    """The generation a prepare forms (see the module docstring for the two shapes)."""
    prev = event.get("prev_generation")
    if prev is not None:
        return int(prev) + 1
    old = event.get("generation")
    return int(old) + 1 if old is not None else None


# --- the fold -------------------------------------------------------------------------------------------------------

class _Fold(MembershipFold):
    def __init__(self, events: list[Event]) -> None:
        super().__init__(Timeline(events=events, generations={}))
        self.last_target = 0
        self.lists = PartitionLists()
        self.join_started: dict[str, int] = {}  # client -> its first "(Re-)joining group" since its last sync

    def gen(self, number: int, event: Event) -> Generation:
        return self.t.generation(number, event)

    def run(self) -> Timeline:
        handlers = self.handlers()
        for event in self.t.events:
            handler = handlers.get(event["event_type"])
            if handler is not None:
                handler(event)
        if self.epochs.epochs:
            self.epochs.finish()
            self.t.member_times = self.epochs.partition_times()
        self.t.group_kind = next((e["group_kind"] for e in self.t.events if e.get("group_kind")), None)
        return self.t

    def handlers(self) -> dict[str, Callable[[Event], None]]:
        return {
            "REBALANCE_PREPARE": self.prepare,
            "JOIN_COMPLETE": self.join_complete,
            "SYNC_LEADER_ASSIGNMENT": self.sync,
            "GROUP_EMPTY": self.empty,
            "GENERATION_SNAPSHOT": self.snapshot,
            "CLIENT_LEADER_ASSIGNMENT": self.client_leader,
            "CLIENT_JOINED": self.client_joined,
            "CLIENT_JOIN_START": self.client_join_start,
            "CLIENT_SYNCED": self.client_synced,
            "MEMBER_JOINED": self.joined,
            "MEMBER_JOIN_REQUEST": self.join_request,
            "PENDING_MEMBER_EXPIRED": self.pending_gone,
            "STATIC_MEMBER_REPLACED": self.replaced,
            "STATIC_MEMBER_REJOINED": self.static_rejoined,
            "MEMBER_LEFT": self.left,
            "MEMBER_SESSION_EXPIRED": self.departed,
            "K848_MEMBER_LEFT": self.k848_left,
            "K848_MEMBER_FENCED": self.left,
            "K848_EPOCH_BUMP": self.epochs.bump,
            "K848_TARGET_COMPUTED": self.epochs.target,
            "K848_MEMBER_STATE": self.epochs.state,
            "MEMBERS_DROPPED_NOT_REJOINED": self.dropped,
            "CLIENT_PARTITIONS_REVOKED": self.t.client_partitions.append,
            "CLIENT_PARTITIONS_ASSIGNED": self.t.client_partitions.append,
            "CLIENT_PARTITIONS_LOST": self.t.client_partitions.append,
            "GROUP_LOADED": self.t.coordinator_events.append,
            "GROUP_UNLOADED": self.t.coordinator_events.append,
        }

    # -- coordinator lifecycle -------------------------------------------------------------------------------------

    def prepare(self, e: Event) -> None:
        target = prepare_target(e)
        if target is None:
            target = self.last_target + 1
        self.last_target = max(self.last_target, target)
        g = self.gen(target, e)
        g.has_log = g.has_log or e.get("source") in _LOG_SOURCES
        if g.t_prepare is None or e["ts"] < g.t_prepare:
            g.t_prepare, g.prepare = e["ts"], e
        code = e.get("reason_code")
        if code and code not in g.trigger_codes:
            g.trigger_codes.append(code)

    def _coordinator_line(self, e: Event) -> Generation | None:
        number = e.get("generation")
        if number is None or number <= 0:
            return None
        self.last_target = max(self.last_target, number)
        g = self.gen(number, e)
        g.has_log = True
        _fill(g, e)
        return g

    def join_complete(self, e: Event) -> None:
        g = self._coordinator_line(e)
        if g is None:
            return
        if g.t_join_done is None or e["ts"] < g.t_join_done:
            g.t_join_done = e["ts"]
        if g.n_members is None:
            g.n_members, g.n_static = e.get("n_members"), e.get("n_static")
        self._promote_pending()
        self._members_from_events(g)

    def sync(self, e: Event) -> None:
        g = self._coordinator_line(e)
        if g is None:
            return
        if g.t_sync is None or e["ts"] < g.t_sync:
            g.t_sync = e["ts"]
        # B3 "The group has K members, S of which are static" (3.0+; a snapshot's own count wins)
        if g.n_members is None:
            g.n_members = e.get("n_members")
        if g.n_static is None or g.members_from != "snapshot":
            g.n_static = e.get("n_static", g.n_static)
        self._members_from_events(g)

    def empty(self, e: Event) -> None:
        self.current.clear()
        g = self._coordinator_line(e)  # generation 0 is the group's creation, not a rebalance
        if g is None:
            return
        g.empty = True
        if g.t_join_done is None or e["ts"] < g.t_join_done:
            g.t_join_done = e["ts"]
        g.n_members, g.n_static = 0, 0
        if g.members is None or g.members_from == "events":
            g.members, g.member_rows, g.members_from = [], [], "events"

    def snapshot(self, e: Event) -> None:
        number = e.get("generation")
        if number is None or number <= 0:
            return
        g = self.gen(number, e)
        _fill(g, e)
        if e.get("ts_kind") == "current_state":
            if g.t_join_done is None:
                g.t_join_done = e["ts"]
        elif g.t_snapshot is None or e["ts"] < g.t_snapshot:
            g.t_snapshot = e["ts"]
        g.has_snapshot = True
        rows = e.get("members")
        members = [member_of(r, self.lists) for r in rows] if rows is not None else None
        if members:
            self._snapshot_replacements(g, members, e)
        if members is not None and _richer(g, members):
            g.members = members
            g.member_rows, g.members_from = rows, "snapshot"
            g.n_members = len(members)
            g.n_static = sum(1 for m in members if m.group_instance_id is not None)
            directory = self.t.directory
            for m in members:
                if m.member_id not in directory:
                    self._learn(m)
        if not rows and g.members is None:
            g.empty = True

    # -- client evidence -------------------------------------------------------------------------------------------

    def client_leader(self, e: Event) -> None:
        number = e.get("generation")
        if number is None or number <= 0:
            return
        g = self.gen(number, e)
        _fill(g, e)
        rows = e.get("members")
        if rows and (g.members is None or g.members_from == "events"):
            g.members = [member_of(r, self.lists) for r in rows]
            g.member_rows, g.members_from = rows, "client"
            if g.n_members is None:
                g.n_members = len(rows)

    def client_joined(self, e: Event) -> None:
        number = e.get("generation")
        if number is None or number <= 0:
            return
        g = self.gen(number, e)
        if g.protocol is None:
            g.protocol = e.get("protocol")
        member_id = e.get("member_id")
        if member_id:
            known = self.t.directory.setdefault(member_id, Member(member_id))
            known.client_id = known.client_id or e.get("client_id")
        _earliest(g.client_times, 0, self.join_started.get(_client(e)))
        _earliest(g.client_times, 1, e["ts"])

    def client_join_start(self, e: Event) -> None:
        self.join_started.setdefault(_client(e), e["ts"])

    def client_synced(self, e: Event) -> None:
        """A member's SyncGroup answer: the generation completed (a Java client logs it at INFO)."""
        number = e.get("generation")
        self.join_started.pop(_client(e), None)
        if number is None or number <= 0:
            return
        g = self.gen(number, e)
        if g.protocol is None:
            g.protocol = e.get("protocol")
        _earliest(g.client_times, 2, e["ts"])

def _client(e: Event) -> str:
    return str(e.get("client_id") or e.get("member_id") or "")


def _earliest(times: list[int | None], at: int, ts: int | None) -> None:
    current = times[at]
    if ts is not None and (current is None or ts < current):
        times[at] = ts


def _client_times(g: Generation) -> None:
    """Where no coordinator line or record times the generation, its members' own logs do: the first member's
    "(Re-)joining group", the first JoinGroup answer and the first SyncGroup answer (a synced generation is
    complete). A Java client log alone thus gives every generation it took part in, with measured times."""
    prepare, joined, synced = g.client_times
    if g.t_prepare is None and prepare is not None and (joined is None or prepare <= joined):
        g.t_prepare = prepare
    if g.t_join_done is None and joined is not None:
        g.t_join_done = joined
    if g.t_sync is None and synced is not None and not g.has_snapshot:
        g.t_sync = synced


def _fill(g: Generation, e: Event) -> None:
    if g.leader_id is None:
        g.leader_id = e.get("leader_id")
    if g.protocol is None:
        g.protocol = e.get("protocol")
    if g.protocol_type is None:
        g.protocol_type = e.get("protocol_type")


def _richer(g: Generation, members: list[Member]) -> bool:
    """A snapshot (its ``members``) replaces what is known unless an earlier snapshot already had the assignments."""
    if g.members is None or g.members_from != "snapshot":
        return True
    had = all(m.assignment is not None for m in g.members)
    has = all(m.assignment is not None for m in members)
    return has and not had


def fold(events: Iterable[Event]) -> Timeline:
    """Sort ``events`` (one group's, any sources, any order) and fold them into generations."""
    timeline = _Fold(ordered(events)).run()
    for g in timeline.generations.values():
        _client_times(g)
        if g.members is None and g.fallback is not None:  # no snapshot: the members, without assignments
            g.members = [Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rack_id,
                                m.session_timeout_ms, m.topics) for m in g.fallback]
            g.member_rows = [member_row(m) for m in g.members]
            g.members_from = "events"
        g.fallback = None
    return timeline
