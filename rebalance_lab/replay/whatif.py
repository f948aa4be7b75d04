"""What-if: the recorded membership re-run under another assignor (spec/replay-inputs.md §7.4).

Each recorded completed generation is one JoinGroup/SyncGroup *round*: the recorded members, in
the recorded (JoinGroup-response) order, with their recorded topics, rack and instance id, over
the partition counts of that time. What they *send* is what a Java consumer would send given
the what-if's own previous output, not the recorded one:

* ``range``/``roundrobin``/``sticky`` (eager): owned partitions empty (``onJoinPrepare`` revoked
  them); ``sticky`` user data = the member's last assignment as it decoded it and the generation
  of that assignment (``StickyAssignor.onAssignment``), null before its first one.
* ``cooperative-sticky``: owned = its last assignment (written sorted, as
  ``serializeSubscription`` does), user data = the generation of that assignment (-1 before one).
  Our ``CooperativeStickyAssignor`` already withholds every partition that changes owner (Java's
  ``assignPartitions`` adjustment, assignors.md §5.6), so a round that leaves an owned partition
  unassigned needs a follow-up round.
* The subscription's ``generationId`` is the generation the member last joined: the recorded
  value (snapshots carry it), mapped onto the what-if's own rounds; where not recorded, the
  what-if's last round with that member. A member that keeps its member id and has never recorded
  a generation sends -1 because its client's subscription has no such field (v0/v1: kafka-python,
  Java before 3.4, KAFKA-13715): the Java client the what-if stands for would send its generation, so that -1 is
  read as not recorded. Once a member has recorded one, a -1 is a reset (its partitions are lost).
* A member is matched to its previous state by member id, else by group.instance.id (a static
  member that came back under a new id and got its old assignment handed over), unless it
  recorded generation -1 (a fresh process). A member with no state sends what it recorded (the
  first generation in the data starts from the recorded owned partitions).
* The leader's assignor object lives as long as the leader (Java keeps ``maxGeneration`` in the
  instance, quirk Q4): one instance per leader member.

Per episode (rows are keyed by episode, ``generation`` is the episode's last recorded generation):
round 1 uses the episode's first completed generation; while the what-if withheld partitions it
runs a follow-up round, over the episode's next recorded generation if there is one, else over
the same members (an extra round the recording does not have). A recorded follow-up the what-if
does not need is skipped (its members are those of the round before, or it is run as a round of
its own when its membership differs). ``reproduced`` is true when every round that lines up with
a recorded generation gave exactly the recorded assignment (per member, as a set: the consumer
treats it as one, assignors.md §1.5) and the what-if needed exactly the recorded rounds.

Estimates (documented model, durations from the recorded episode): D1 = first sync - start (a
full round), D2 = the recorded follow-up's sync - the first sync, else D1.

* eager: every member stops for D1 (``est_stw_ms`` = D1); every partition that had an owner is
  unowned for D1.
* cooperative: no stop-the-world (``est_stw_ms`` = 0, members keep their retained partitions);
  partitions of departed members wait D1, each withheld partition waits D2 per follow-up round.

Static membership (``<assignor>+static``, or ``static`` for the recorded assignor): members get
an instance id (:mod:`.static`), are matched by it, and the episodes :class:`~.static.Avoidance`
finds never happen: their row has no moves and zero estimates, and the assignment carries over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any, Protocol

from rebalance_lab.clients.assignors import ASSIGNORS as ASSIGNOR_CLASSES
from rebalance_lab.clients.assignors import AssignorError
from rebalance_lab.clients.assignors.common import topic_partition_key
from rebalance_lab.clients.assignors.java_hashmap import native_order_is_java
from rebalance_lab.clients.assignors.types import ClusterView, GroupSubscription, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_cooperative_user_data
from rebalance_lab.replay.episodes import Episode, Facts
from rebalance_lab.replay.static import identity, instance_id
from rebalance_lab.replay.timeline import COOPERATIVE_PROTOCOLS, TP, Generation, Member
from rebalance_lab.replay.userdata import sticky_user_data

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
STATIC_SUFFIX = "+static"
MAX_FOLLOW_UPS = 4  # a what-if that keeps withholding is cut off (and reported as not reproduced)


_new_tuple = tuple.__new__
_new_object = object.__new__
_topic_of = itemgetter(0)


class WhatIfError(ValueError):
    pass


class ListAssignor(Protocol):
    """An assignor as the what-if calls it: each member's list, without ``Assignment`` wrappers."""

    def assign_lists(self, cluster: ClusterView, group: GroupSubscription) -> Mapping[str, Sequence[TopicPartition]]:
        ...


@dataclass(frozen=True)
class Spec:
    """A what-if: an assignor (None: the recorded one) and whether members are made static."""

    assignor: str | None
    static: bool

    @staticmethod
    def parse(text: str) -> Spec:
        name, static = (text[: -len(STATIC_SUFFIX)], True) if text.endswith(STATIC_SUFFIX) else (text, False)
        if name == "static" and not static:
            return Spec(None, True)
        if name not in ASSIGNORS:
            raise WhatIfError(f"unknown what-if {text!r}: one of {', '.join(ASSIGNORS)}, optionally with "
                              f"'{STATIC_SUFFIX}', or 'static'")
        return Spec(name, static)


@dataclass(slots=True, init=False)  # the __init__ below is compiled (generation.Member says why)
class SimMember:
    received: tuple[TopicPartition, ...]  # its last assignment, as it decoded it
    assigned_gen: int  # generation of that assignment
    joined_gen: int  # the last round it took part in
    key: str

    def __init__(self, received: tuple[TopicPartition, ...], assigned_gen: int, joined_gen: int, key: str) -> None:
        self.received = received
        self.assigned_gen = assigned_gen
        self.joined_gen = joined_gen
        self.key = key


@dataclass(slots=True, init=False)  # the __init__ below is compiled (generation.Member says why)
class Round:
    members: list[Member]
    keys: dict[str, str]  # member id -> identity
    received: dict[str, tuple[TopicPartition, ...]]
    withheld: set[TopicPartition]

    def __init__(self, members: list[Member], keys: dict[str, str], received: dict[str, tuple[TopicPartition, ...]],
                 withheld: set[TopicPartition]) -> None:
        self.members = members
        self.keys = keys
        self.received = received
        self.withheld = withheld


@dataclass(init=False)  # the __init__ below is compiled (generation.Member says why)
class EpisodeInput:
    """What the what-if needs of one recorded episode (built by the model)."""

    episode: Episode
    facts: Facts
    counts: Mapping[int, dict[str, int]]  # generation -> partition counts of its members' topics
    unknown: Mapping[int, str] = field(default_factory=dict)  # generation -> why its what-if cannot run (counts.py)

    def __init__(self, episode: Episode, facts: Facts, counts: Mapping[int, dict[str, int]],
                 unknown: Mapping[int, str] | None = None) -> None:
        self.episode = episode
        self.facts = facts
        self.counts = counts
        self.unknown = {} if unknown is None else unknown


def mode_of(assignor: str, static: bool) -> str:
    return ("cooperative" if assignor in COOPERATIVE_PROTOCOLS else "eager") + (STATIC_SUFFIX if static else "")


def _as_received(parts: Sequence[TopicPartition]) -> tuple[TopicPartition, ...]:
    """The list a member decodes: grouped by topic in first-appearance order (``serializeAssignment``)."""
    if len(parts) < 3:  # two partitions are always grouped
        return tuple(parts)
    topics: dict[str, list[TopicPartition]] = {}
    for tp in parts:
        topics.setdefault(tp[0], []).append(tp)  # tp[0]: the topic, without the named field's lookup
    return tuple(parts) if len(topics) <= 1 else tuple(chain.from_iterable(topics.values()))


def _wire_order(owned: Sequence[TopicPartition]) -> tuple[TopicPartition, ...]:
    """``owned`` sorted as ``serializeSubscription`` writes it (``topic_partition_key``). Where every topic
    compares the same in Python and Java, the tuples' own order is that order, without a key call per element;
    so it is over one topic (the first and last sorted share it): the partition ids, ints, decide alone."""
    if len(owned) < 2:
        return tuple(owned)
    ordered = sorted(owned)
    if ordered[0][0] == ordered[-1][0] or native_order_is_java(set(map(_topic_of, ordered))):
        return tuple(ordered)
    return tuple(sorted(owned, key=topic_partition_key))


# A member's user data is its last generation: the same few values, packed once each.
_cooperative_user_data = lru_cache(maxsize=4096)(encode_cooperative_user_data)

_SUBSCRIPTIONS_REMEMBERED = 8192
_subscriptions: dict[tuple[Any, ...], Subscription] = {}


def _subscription(topics: tuple[str, ...], user_data: bytes | None, owned: tuple[TopicPartition, ...],
                  generation: int | None, rack: str | None, instance: str | None) -> Subscription:
    """``Subscription(...)``; one without owned partitions (most: a member that rejoins has a new id, so no
    past) is made once per distinct value and shared, as it is immutable and assignors only read it."""
    if owned:  # made as the frozen dataclass's __init__ makes it, without its six object.__setattr__ calls
        made = _new_object(Subscription)
        vars(made).update(topics=topics, user_data=user_data, owned_partitions=owned, generation_id=generation,
                          rack_id=rack, group_instance_id=instance)
        return made
    key = (topics, user_data, generation, rack, instance)
    found = _subscriptions.get(key)
    if found is None:
        if len(_subscriptions) >= _SUBSCRIPTIONS_REMEMBERED:
            _subscriptions.clear()
        found = _subscriptions[key] = Subscription(topics, user_data, (), generation, rack, instance)
    return found


@lru_cache(maxsize=1024)
def _cluster(counts: tuple[tuple[str, int], ...]) -> ClusterView:
    return ClusterView.of_counts(dict(counts))


def _topic_partitions(parts: Sequence[TP]) -> tuple[TopicPartition, ...]:
    """Recorded (topic, partition) pairs as the assignors' type."""
    return tuple([_new_tuple(TopicPartition, tp) for tp in parts])


def _same(received: Mapping[str, Sequence[TP]], recorded: Mapping[str, Sequence[TP]]) -> bool:
    if received.keys() != recorded.keys():
        return False
    # equal lists are equal sets: only lists in another order need the sets
    return all(parts == recorded[m] or set(parts) == set(recorded[m]) for m, parts in received.items())


def simulatable(g: Generation) -> bool:
    return bool(g.members) and all(m.topics is not None for m in g.members or ())


@dataclass
class Chain:
    """The what-if's own history: each member's state after the rounds so far."""

    spec: Spec
    state: dict[str, SimMember] = field(default_factory=dict)
    by_identity: dict[str, SimMember] = field(default_factory=dict)
    assignors: dict[tuple[str, str], ListAssignor] = field(default_factory=dict)
    alias: dict[int, int] = field(default_factory=dict)  # recorded generation -> what-if round number
    sends_generation: set[str] = field(default_factory=set)  # member ids that recorded a generation >= 0

    def identity(self, m: Member) -> str:
        return identity(m, self.spec.static)

    def lookup(self, m: Member) -> SimMember | None:
        found = self.state.get(m.member_id)
        if found is not None:
            return found
        if m.group_instance_id is None and not self.spec.static:
            return None
        if not self.spec.static and m.sub_generation is not None and m.sub_generation < 0:
            return None  # a fresh process under a known instance id
        return self.by_identity.get(self.identity(m))

    def protocol_generation(self, st: SimMember, recorded: int | None) -> int | None:
        if self.spec.static or recorded is None:
            return st.joined_gen if st.joined_gen >= 0 else None
        if recorded < 0:
            return None
        return self.alias.get(recorded, recorded)

    def subscription(self, m: Member, assignor: str) -> Subscription:
        return self.subscriptions([m], assignor)[m.member_id]

    def subscriptions(self, members: list[Member], assignor: str) -> dict[str, Subscription]:
        """Each member's subscription (by member id, in ``members`` order); the per-assignor choices are
        made once per round, not once per member."""
        static = self.spec.static
        cooperative = assignor in COOPERATIVE_PROTOCOLS
        sticky = assignor == "sticky"
        # range/roundrobin never send a member's past: its recorded owned partitions are not even read
        plain = not cooperative and not sticky
        state_get = self.state.get
        sends = self.sends_generation
        subs: dict[str, Subscription] = {}
        for m in members:
            st = state_get(m.member_id)
            recorded = m.sub_generation
            if st is not None and recorded is not None and recorded < 0 and m.member_id not in sends:
                recorded = None  # the same member, whose client never sent a generation (v0/v1): not a reset
            elif recorded is not None and recorded >= 0:
                sends.add(m.member_id)
            if st is None and (static or m.group_instance_id is not None):
                st = self.lookup(m)
            if st is None:
                gen = recorded if recorded is not None and recorded >= 0 else None
                last, last_gen = () if plain else _topic_partitions(m.owned or ()), gen
                owned = last
            else:
                gen = self.protocol_generation(st, recorded)
                last, last_gen = st.received, st.assigned_gen
                owned = last if gen is not None else ()  # a reset generation loses its partitions
            topics = m.topics or ()
            instance = instance_id(m) if static else m.group_instance_id
            if cooperative:
                data = _cooperative_user_data(last_gen if last_gen is not None else -1)
                subs[m.member_id] = _subscription(topics, data, _wire_order(owned), gen, m.rack_id, instance)
                continue
            user_data = None
            if sticky and (st is not None or last):
                user_data = sticky_user_data(last, last_gen)
            subs[m.member_id] = _subscription(topics, user_data, (), gen, m.rack_id, instance)
        return subs

    def assignor_for(self, leader: str | None, name: str) -> ListAssignor:
        key = (leader or "", name)
        found = self.assignors.get(key)
        if found is None:
            found = self.assignors[key] = ASSIGNOR_CLASSES[name]()
        return found

    def run(self, members: list[Member], counts: Mapping[str, int], number: int, leader: Member | None,
            assignor: str) -> Round | None:
        """One round; None when the assignor throws (as Java's would, e.g. no partitions for anyone)."""
        subs = self.subscriptions(members, assignor)
        owned_before: set[TopicPartition] = set()
        if assignor in COOPERATIVE_PROTOCOLS:  # eager members own nothing
            owned_before.update(chain.from_iterable(sub.owned_partitions for sub in subs.values()))
        leader_key = self.identity(leader) if leader is not None else None
        try:
            lists = self.assignor_for(leader_key, assignor).assign_lists(
                _cluster(tuple(sorted(counts.items()))), GroupSubscription(subs))
        except AssignorError:
            return None
        # Over one topic every list is grouped already.
        regroup = _as_received if len(counts) > 1 else tuple
        empty: tuple[TopicPartition, ...] = ()
        received = {m: regroup(lists.get(m, empty)) for m in subs}
        withheld = owned_before.difference(*received.values()) if owned_before else owned_before
        state: dict[str, SimMember] = {}
        by_identity = self.by_identity
        keys: dict[str, str] = {}
        static = self.spec.static
        for m in members:
            member_id = m.member_id
            key = keys[member_id] = identity(m, static)
            state[member_id] = by_identity[key] = SimMember(received[member_id], number, number, key)
        self.state = state
        return Round(members, keys, received, withheld)

    def forget(self) -> None:
        """The group went empty, or a generation could not be simulated: start again from the recording."""
        self.state = {}
        self.by_identity = {}

    def owners(self) -> dict[TopicPartition, str]:
        return {tp: sim.key for sim in self.state.values() for tp in sim.received}


# --- one episode ----------------------------------------------------------------------------------------------------

@dataclass(init=False)  # the __init__ below is compiled (generation.Member says why)
class _Outcome:
    rounds: list[Round] = field(default_factory=list)
    aligned: list[tuple[Generation, Round]] = field(default_factory=list)
    extra_rounds: int = 0
    skipped: int = 0
    failed: bool = False
    unknown: str | None = None  # a round's generation cannot be replayed: why (EpisodeInput.unknown)

    def __init__(self) -> None:
        self.rounds = []
        self.aligned = []
        self.extra_rounds = 0
        self.skipped = 0
        self.failed = False
        self.unknown = None


def _leader(g: Generation) -> Member | None:
    for m in g.members or ():
        if m.member_id == g.leader_id:
            return m
    return None


def _same_members(a: Generation, b: Generation) -> bool:
    return {m.member_id for m in a.members or ()} == {m.member_id for m in b.members or ()}


_NO_COUNTS: dict[str, int] = {}


def _simulate(chain_: Chain, item: EpisodeInput, assignor: str, completed: list[Generation]) -> _Outcome:
    pending = [g for g in completed if simulatable(g)]
    pending.reverse()  # a stack: the next recorded generation is last
    out = _Outcome()
    cooperative = assignor in COOPERATIVE_PROTOCOLS
    unknown = item.unknown
    base: Generation | None = None
    while True:
        withholding = cooperative and bool(out.rounds) and bool(out.rounds[-1].withheld)
        if base is not None and not withholding:
            # recorded follow-ups the what-if does not need; one with other members is a rebalance of its own
            while pending and _same_members(pending[-1], base):
                chain_.alias[pending.pop().generation] = chain_.alias.get(base.generation, base.generation)
                out.skipped += 1
        if not pending and not (withholding and base is not None):
            break
        if len(out.rounds) > MAX_FOLLOW_UPS:
            out.failed = True
            break
        aligned = bool(pending)
        g = pending.pop() if pending else base
        assert g is not None
        if unknown and g.generation in unknown:
            out.unknown = unknown[g.generation]
            break
        number = chain_.alias.get(g.generation, g.generation)
        result = chain_.run(g.members or [], item.counts.get(g.generation, _NO_COUNTS), number, _leader(g), assignor)
        if result is None:
            out.failed = True
            break
        out.rounds.append(result)
        if aligned:
            out.aligned.append((g, result))
        else:
            out.extra_rounds += 1
        base = g
    return out


# --- rows -----------------------------------------------------------------------------------------------------------

def _durations(ep: Episode, completed: list[Generation]) -> tuple[float | None, float | None]:
    start = ep.t_start
    if not completed or start is None or completed[0].t_sync_done is None:
        return None, None
    first_sync = completed[0].t_sync_done
    d1 = (first_sync - start) / 1000.0
    if len(completed) > 1 and completed[1].t_sync_done is not None:
        return d1, (completed[1].t_sync_done - first_sync) / 1000.0
    return d1, d1


def _estimates(durations: tuple[float | None, float | None], out: _Outcome, before: dict[TopicPartition, str],
               cooperative: bool) -> tuple[float | None, float | None]:
    d1, d2 = durations
    if d1 is None or d2 is None:
        return None, None
    final = out.rounds[-1]
    if not cooperative:
        had_owner = sum(map(before.__contains__, chain.from_iterable(final.received.values())))
        return d1, had_owner * d1
    keys = set(final.keys.values())
    orphans = len(before) - sum(map(keys.__contains__, before.values()))
    waited = sum(len(r.withheld) for r in out.rounds)
    return 0.0, orphans * d1 + waited * d2


def _loads(received: Mapping[str, Sequence[TP]]) -> tuple[int | None, int | None]:
    if not received:
        return None, None
    sizes = [len(p) for p in received.values()]
    return max(sizes), min(sizes)


def _row(base: dict[str, Any], item: EpisodeInput, completed: list[Generation], assignor: str,
         static: bool) -> dict[str, Any]:
    f = item.facts
    actual_imbalance = f.loads[0] - f.loads[1] if f.loads is not None else None
    ep = item.episode
    last = completed[-1].generation if completed else ep.gens[-1].generation
    return {**base, "episode_id": ep.episode_id, "generation": last, "assignor": assignor,
            "mode": mode_of(assignor, static), "actual_partitions_moved": f.moved, "actual_revocations": f.revoked,
            "actual_imbalance": actual_imbalance, "unknown_reason": None}


def _finish(row: dict[str, Any], moved: int | None, imbalance: int | None) -> dict[str, Any]:
    actual_moved, actual_imbalance = row["actual_partitions_moved"], row["actual_imbalance"]
    row["delta_moved"] = moved - actual_moved if moved is not None and actual_moved is not None else None
    row["delta_imbalance"] = (imbalance - actual_imbalance
                              if imbalance is not None and actual_imbalance is not None else None)
    return row


class _PartitionRows(dict[TP, dict[str, Any]]):
    """Each partition's ``{"topic", "partition"}`` value, made once and shared between the rows that list
    it (rows are never mutated); bounded by :data:`_PARTITION_ROWS_REMEMBERED`."""

    def __missing__(self, tp: TP) -> dict[str, Any]:
        if len(self) >= _PARTITION_ROWS_REMEMBERED:
            self.clear()
        row = self[tp] = {"topic": tp[0], "partition": tp[1]}
        return row


_PARTITION_ROWS_REMEMBERED = 65536
_partition_row = _PartitionRows().__getitem__


def _partition_rows(parts: tuple[TP, ...]) -> list[dict[str, Any]]:
    """The ``partitions`` list of one member."""
    return list(map(_partition_row, parts))


def _assignment_column(received: Mapping[str, tuple[TP, ...]]) -> list[dict[str, Any]]:
    return [{"member_id": m, "partitions": _partition_rows(parts)} for m, parts in received.items()]


def _moved(before_state: Mapping[str, SimMember], before: dict[TopicPartition, str], final: Round) -> int:
    """Partitions whose owner changed between two members both present at the end (by identity)."""
    keys = final.keys
    live = set(keys.values())
    kept = {sim.key: sim.received for sim in before_state.values()}
    moved = 0
    for member, parts in final.received.items():
        key = keys[member]
        if kept.get(key) == parts:
            continue  # kept exactly its list
        for tp in parts:
            old = before.get(tp)
            if old is not None and old != key and old in live:
                moved += 1
    return moved


def _reproduced(out: _Outcome) -> bool | None:
    if out.failed:
        return False
    recorded = [g.assignment for g, _ in out.aligned]
    if any(r is None for r in recorded):
        return None
    if out.extra_rounds or out.skipped:
        return False
    return all(_same(r.received, g or {}) for g, (_, r) in zip(recorded, out.aligned, strict=True))


def _avoided_row(chain_: Chain, row: dict[str, Any]) -> dict[str, Any]:
    """Static membership avoided the episode: nothing moves, the assignment carries over."""
    received: dict[str, tuple[TP, ...]] = {mid: sim.received for mid, sim in chain_.state.items()}
    max_load, min_load = _loads(received)
    imbalance = max_load - min_load if max_load is not None and min_load is not None else None
    row.update(partitions_moved=0, revocations=0, follow_up_generations=0, max_load=max_load, min_load=min_load,
               imbalance=imbalance, est_stw_ms=0.0, est_unowned_partition_ms=0.0, reproduced=None,
               assignment=_assignment_column(received))
    return _finish(row, 0, imbalance)


def episode_row(chain_: Chain, item: EpisodeInput, assignor: str, base: dict[str, Any],
                avoided: bool = False) -> dict[str, Any] | None:
    """The whatif_results row of one episode (None when it has no round to simulate), advancing ``chain_``."""
    completed = item.episode.completed
    row = _row(base, item, completed, assignor, chain_.spec.static)
    if avoided:
        return _avoided_row(chain_, row)
    before_state = chain_.state
    before = chain_.owners()
    out = _simulate(chain_, item, assignor, completed)
    if out.unknown is not None:  # counted in the row: the report says why, the next episode starts afresh
        chain_.forget()
        return {**row, "reproduced": None, "unknown_reason": out.unknown}
    if not out.rounds:
        after = item.episode.after
        chain_.forget()
        if out.failed:
            return {**row, "reproduced": False}
        return None if after is None or after.empty or not after.members else row
    final = out.rounds[-1]
    cooperative = assignor in COOPERATIVE_PROTOCOLS
    moved = _moved(before_state, before, final)
    revocations = sum(len(r.withheld) for r in out.rounds) if cooperative else len(before)
    max_load, min_load = _loads(final.received)
    imbalance = max_load - min_load if max_load is not None and min_load is not None else None
    stw, unowned = _estimates(_durations(item.episode, completed), out, before, cooperative)
    row.update(partitions_moved=moved, revocations=revocations, follow_up_generations=len(out.rounds) - 1,
               max_load=max_load, min_load=min_load, imbalance=imbalance, est_stw_ms=stw,
               est_unowned_partition_ms=unowned, reproduced=_reproduced(out),
               assignment=_assignment_column(final.received))
    return _finish(row, moved, imbalance)


def whatif_rows(spec_text: str, items: Sequence[EpisodeInput], base: dict[str, Any],
                avoided: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    """Every episode of one group under one what-if, in order (each round feeds the next); ``avoided``
    are the episodes static membership avoids (used by static what-ifs only)."""
    spec = Spec.parse(spec_text)
    base = {**base, "whatif": spec_text}  # the report names a row by the what-if asked, not the assignor it ran
    chain_ = Chain(spec)
    rows: list[dict[str, Any]] = []
    for item in items:
        if spec.assignor is None and item.episode.gens[0].kip848:
            continue  # a KIP-848 group's assignor runs on the broker: none of ours can replay it
        assignor = spec.assignor or item.episode.protocol
        if assignor not in ASSIGNORS:
            continue
        skip = spec.static and item.episode.episode_id in avoided
        row = episode_row(chain_, item, assignor, base, skip)
        if row is not None:
            rows.append(row)
    return rows
