"""The replay's record of one group: :class:`Member`, :class:`Generation` and :class:`Timeline`.

These are the data the fold (:mod:`.timeline` for classic groups, :mod:`.epochs` for KIP-848 group
epochs) fills and the later steps (episodes, moves, what-if, summary) read. They live in their own
module so that the two folds can share them without importing each other (issue 20 item 7: the
fold calls :class:`.epochs.EpochFold`, and the epoch fold needs only these types).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]
TP = tuple[str, int]  # (topic, partition); the assignors' TopicPartition is one too
Assignment = dict[str, tuple[TP, ...]]
Owners = dict[TP, "Member"]
COOPERATIVE_PROTOCOLS = frozenset({"cooperative-sticky"})


@dataclass(slots=True, init=False)  # the __init__ below: compiled by mypyc (see it)
class Member:
    """One member of a generation, as its snapshot (or the best other source) shows it."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    rack_id: str | None = None
    session_timeout_ms: int | None = None
    topics: tuple[str, ...] | None = None
    owned_rows: list[dict[str, Any]] | None = None  # the subscription's owned partitions as recorded
    sub_generation: int | None = None  # the subscription's generationId (-1: none sent); None: not recorded
    assignment: tuple[TP, ...] | None = None
    #: who owns a partition across a static replacement: the instance id, else the member id
    key: str = ""
    owned_cache: tuple[TP, ...] | None = None

    # Written out, not generated: mypyc compiles a dataclass's own __init__, but the one the dataclass decorator
    # generates at import is interpreted Python (~1.7 us a call; the fold and the what-if make ~1.5 a 1e4-event
    # replay's event). The fields' order and defaults as declared above; the dataclass gives eq and repr.
    def __init__(self, member_id: str, group_instance_id: str | None = None, client_id: str | None = None,
                 client_host: str | None = None, rack_id: str | None = None, session_timeout_ms: int | None = None,
                 topics: tuple[str, ...] | None = None, owned_rows: list[dict[str, Any]] | None = None,
                 sub_generation: int | None = None, assignment: tuple[TP, ...] | None = None, key: str = "",
                 owned_cache: tuple[TP, ...] | None = None) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rack_id = rack_id
        self.session_timeout_ms = session_timeout_ms
        self.topics = topics
        self.owned_rows = owned_rows
        self.sub_generation = sub_generation
        self.assignment = assignment
        self.key = key or (group_instance_id if group_instance_id is not None else member_id)
        self.owned_cache = owned_cache

    @property
    def owned(self) -> tuple[TP, ...] | None:
        """The owned partitions the member sent (read on first use: only the cooperative protocol needs them)."""
        if self.owned_cache is None and self.owned_rows is not None:
            self.owned_cache = tps(self.owned_rows)
        return self.owned_cache


@dataclass(slots=True)
class Generation:
    generation: int
    t_prepare: int | None = None
    prepare: Event | None = None
    t_join_done: int | None = None
    t_sync: int | None = None
    t_snapshot: int | None = None
    leader_id: str | None = None
    protocol_type: str | None = None
    protocol: str | None = None
    group_kind: str | None = None
    n_members: int | None = None
    n_static: int | None = None
    member_rows: list[Any] | None = None  # the MEMBER structs of the group_generations row (dicts or tuples)
    members: list[Member] | None = None  # None: membership unknown
    members_from: str | None = None  # "snapshot" | "client" | "events"
    fallback: list[Member] | None = None  # the membership member events had built at join/sync time
    owners_cache: tuple[Owners | None] | None = None
    empty: bool = False
    trigger_codes: list[str] = field(default_factory=list)
    has_log: bool = False
    has_snapshot: bool = False
    sources: set[str] = field(default_factory=set)
    episode_id: int | None = None
    kip848: bool = False  # a KIP-848 group epoch (:mod:`.epochs`), not a JoinGroup/SyncGroup generation
    reconciled: bool | None = None  # KIP-848: every member reached the epoch; None: no member state recorded
    trigger_member: str | None = None  # KIP-848: the member whose change started the epoch
    from_empty: bool = False  # KIP-848: the group's first epoch (its first member's join), nobody before it
    #: the members' own times (Java client logs): first "(Re-)joining", first JoinGroup and SyncGroup answers;
    #: the generation's times when no coordinator line or record gives them (:func:`.timeline.fold`)
    client_times: list[int | None] = field(default_factory=lambda: [None, None, None])

    @property
    def t_sync_done(self) -> int | None:
        if self.t_sync is not None:
            return self.t_sync
        if self.t_snapshot is not None:
            return self.t_snapshot
        return self.t_join_done if self.empty else None

    @property
    def completed(self) -> bool:
        """Synced (or snapshotted, or empty); a KIP-848 epoch: reconciled, or not known to be overtaken."""
        if self.kip848:
            return self.reconciled is not False
        return self.t_sync is not None or self.has_snapshot or self.empty

    @property
    def assignment(self) -> Assignment | None:
        """Member id -> partitions, when every member's assignment is known (an empty group: {})."""
        if self.empty and not self.members:
            return {}
        if not self.members or any(m.assignment is None for m in self.members):
            return None
        return {m.member_id: m.assignment or () for m in self.members}

    def owners(self) -> Owners | None:
        """Partition -> owning member, when every member's assignment is known (computed once)."""
        if self.owners_cache is None:
            self.owners_cache = (self._owners(),)
        return self.owners_cache[0]

    def _owners(self) -> Owners | None:
        if self.members is None or any(m.assignment is None for m in self.members):
            return {} if self.empty else None
        owners: Owners = {}
        for member in self.members:
            for tp in member.assignment or ():
                owners[tp] = member
        return owners

    @property
    def cooperative(self) -> bool:
        """Members keep what they are not asked to give up: cooperative-sticky, and every KIP-848 group."""
        return self.kip848 or self.protocol in COOPERATIVE_PROTOCOLS


@dataclass
class Timeline:
    """Everything the derived tables need from one group's events."""

    events: list[Event]
    generations: dict[int, Generation]
    member_events: list[Event] = field(default_factory=list)  # joins, leaves, expiries, static replacements
    client_partitions: list[Event] = field(default_factory=list)  # CLIENT_PARTITIONS_REVOKED/ASSIGNED/LOST
    coordinator_events: list[Event] = field(default_factory=list)  # GROUP_LOADED / GROUP_UNLOADED
    directory: dict[str, Member] = field(default_factory=dict)  # every member id seen -> what is known of it
    static_rejoined: list[Event] = field(default_factory=list)  # STATIC_MEMBER_REJOINED ("no rebalance")
    group_kind: str | None = None
    member_times: PartitionTimes | None = None  # KIP-848: when members gave up and got partitions (.epochs)

    def generation(self, number: int, event: Event) -> Generation:
        """Generation ``number`` (made on first use), noting ``event``'s source and group kind."""
        g = self.generations.get(number)
        if g is None:
            g = self.generations[number] = Generation(number)
        source = event.get("source")
        if source:
            g.sources.add(source)
        if g.group_kind is None:
            g.group_kind = event.get("group_kind")
        return g

    def sorted_generations(self) -> list[Generation]:
        return [self.generations[n] for n in sorted(self.generations)]


@dataclass
class PartitionTimes:
    """Each member's revoke and assign times per partition, from its states (as client logs would give)."""

    revoked: dict[tuple[str, TP], list[int]] = field(default_factory=dict)
    assigned: dict[tuple[str, TP], list[int]] = field(default_factory=dict)

    def add(self, table: dict[tuple[str, TP], list[int]], keys: tuple[str, ...], tps: frozenset[TP], ts: int) -> None:
        for tp in sorted(tps):
            for key in keys:
                table.setdefault((key, tp), []).append(ts)


def tps(values: Iterable[dict[str, Any]] | None) -> tuple[TP, ...] | None:
    if values is None:
        return None
    return tuple([(v["topic"], v["partition"]) for v in values])


def merged(new: Member, old: Member) -> Member:
    """``new`` with the fields it leaves unknown taken from ``old`` (the same member, known before)."""
    return Member(new.member_id, new.group_instance_id or old.group_instance_id, new.client_id or old.client_id,
                  new.client_host or old.client_host, new.rack_id or old.rack_id,
                  new.session_timeout_ms or old.session_timeout_ms, new.topics or old.topics)


def member_row(m: Member) -> dict[str, Any]:
    """The MEMBER struct of a member that no snapshot listed (no owned list, no subscription generation)."""
    row: dict[str, Any] = {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                           "client_host": m.client_host, "rack_id": m.rack_id,
                           "session_timeout_ms": m.session_timeout_ms,
                           "topics": list(m.topics) if m.topics is not None else None}
    if m.assignment is not None:
        row["assignment"] = [{"topic": topic, "partition": partition} for topic, partition in m.assignment]
    return row
