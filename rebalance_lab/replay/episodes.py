"""Generations windowed into logical rebalances ("episodes"), their metrics, and storms
(spec/replay-inputs.md §6.5, §7.2, §7.3).

Windowing, over the generations in number order:

* a generation starts a new episode (normally its ``REBALANCE_PREPARE``), unless
* the previous generation never completed (interrupted between join and sync, §6.5): it
  merges into the next one, which finishes the same rebalance; or
* it is a cooperative follow-up: the previous generation withheld partitions (protocol
  ``cooperative-sticky`` and some member's owned partition went to nobody), or its prepare
  says ``need to revoke partitions and re-join`` (§2.3, §7.3);
* a gap in the generation numbers always starts a new episode.

Times: ``t_start`` is the first prepare (else the first join/sync seen), ``t_end`` the sync of
the episode's last generation (null while it never completed). ``join_ms``/``sync_ms`` describe
the first *completed* generation (for a merged interruption the join phase spans the restart);
``total_ms`` = ``t_end - t_start`` includes cooperative follow-ups.

Storms (§7.3): an episode is in a storm if it is one of at least ``storm_min_episodes``
episodes starting within ``storm_window_s``, or one of a chain of at least
``storm_chain_min_episodes`` episodes where each starts less than ``storm_chain_gap_s``
after the previous one ended. Overlapping runs are one storm; storms are numbered from 1 per
group in time order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from math import sqrt

from rebalance_lab.replay.timeline import COOPERATIVE_PROTOCOLS, TP, Event, Generation, Member, Owners, Timeline

FOLLOW_UP_REASON = "need to revoke partitions and re-join"
_MEMBER_IN_REASON = re.compile(r"(?:[Mm]ember|[Ll]eader) (?!id\b)(\S+?)(?:[ ;]|$)")
_EVENT_CODES = {"MEMBER_LEFT": "member_leave", "MEMBER_SESSION_EXPIRED": "session_timeout",
                "MEMBER_JOINED": "member_join", "STATIC_MEMBER_REPLACED": "static_rejoin_metadata"}


@dataclass(slots=True, init=False)  # the __init__ below is compiled (generation.Member says why)
class Episode:
    episode_id: int
    gens: list[Generation]
    before: Generation | None = None  # the last completed generation before it
    before_known: bool = False  # the membership (and owners) before the episode are known
    storm_id: int | None = None

    def __init__(self, episode_id: int, gens: list[Generation], before: Generation | None = None,
                 before_known: bool = False, storm_id: int | None = None) -> None:
        self.episode_id = episode_id
        self.gens = gens
        self.before = before
        self.before_known = before_known
        self.storm_id = storm_id

    @property
    def completed(self) -> list[Generation]:
        return [g for g in self.gens if g.completed]

    @property
    def after(self) -> Generation | None:
        """The generation the episode ended in (None while it never completed)."""
        last = self.gens[-1]
        return last if last.completed else None

    @property
    def t_start(self) -> int | None:
        first = self.gens[0]
        return first.t_prepare or first.t_join_done or first.t_sync_done

    @property
    def t_end(self) -> int | None:
        after = self.after
        return after.t_sync_done if after is not None else None

    @property
    def protocol(self) -> str | None:
        for g in reversed(self.gens):
            if g.protocol:
                return g.protocol
        return None

    @property
    def cooperative(self) -> bool:
        """Only partitions that change owner are revoked: cooperative-sticky, and every KIP-848 group."""
        return self.gens[0].kip848 or self.protocol in COOPERATIVE_PROTOCOLS


# --- windowing ------------------------------------------------------------------------------------------------------

def withheld(g: Generation) -> set[TP]:
    """Partitions some member owned when it joined and nobody was given (cooperative withholding)."""
    if not g.members:
        return set()
    owned: set[TP] = set()
    assigned: set[TP] = set()
    for m in g.members:
        if m.owned is None or m.assignment is None:
            return set()
        owned.update(m.owned)
        assigned.update(m.assignment)
    return owned - assigned


def is_follow_up(prev: Generation, g: Generation) -> bool:
    prepare = g.prepare or {}
    reason = prepare.get("client_reason") or prepare.get("reason_raw") or ""
    if FOLLOW_UP_REASON in reason:
        return True
    return prev.cooperative and bool(withheld(prev))


def window(gens: list[Generation]) -> list[Episode]:
    """Episodes over generations sorted by number; sets each generation's ``episode_id``."""
    episodes: list[Episode] = []
    prev: Generation | None = None
    for g in gens:
        contiguous = prev is not None and g.generation == prev.generation + 1
        if prev is not None and contiguous and (not prev.completed or is_follow_up(prev, g)):
            episodes[-1].gens.append(g)
        else:
            episodes.append(Episode(len(episodes) + 1, [g]))
        g.episode_id = episodes[-1].episode_id
        prev = g
    _link_before(episodes)
    return episodes


def _link_before(episodes: list[Episode]) -> None:
    last_completed: Generation | None = None
    for ep in episodes:
        first = ep.gens[0].generation
        ep.before = last_completed
        if last_completed is None:
            ep.before_known = first == 1 or ep.gens[0].from_empty
        else:
            ep.before_known = last_completed.generation == first - 1 and last_completed.members is not None
        for g in ep.gens:
            if g.completed:
                last_completed = g


# --- triggers -------------------------------------------------------------------------------------------------------

class Triggers:
    """The first cause of an episode: its prepare's reason, or the leave/expiry/join just before it."""

    def __init__(self, timeline: Timeline) -> None:
        self.events = timeline.member_events
        self.times = [e["ts"] for e in self.events]

    def of(self, ep: Episode, since: int | None) -> tuple[str | None, str | None]:
        first = ep.gens[0]
        prepare = first.prepare
        code = prepare.get("reason_code") if prepare else None
        code = code or (first.trigger_codes[0] if first.trigger_codes else None)
        member = (prepare.get("member_id") if prepare else None) or first.trigger_member
        at = ep.t_start
        cause = self._preceding(at, since, code) if at is not None else None
        if code is None and cause is not None:
            code = _EVENT_CODES.get(cause["event_type"])
        if member is None and cause is not None:
            member = cause.get("member_id")
        if member is None and prepare is not None:
            match = _MEMBER_IN_REASON.search(prepare.get("reason_raw") or "")
            member = match.group(1) if match else None
        return code, member

    def _preceding(self, at: int, since: int | None, code: str | None) -> Event | None:
        wanted = {t for t, c in _EVENT_CODES.items() if c == code} if code else set(_EVENT_CODES)
        i = bisect_right(self.times, at)
        while i > 0:
            i -= 1
            e = self.events[i]
            if since is not None and e["ts"] < since:
                return None
            if e["event_type"] in wanted:
                return e
        return None


# --- facts ----------------------------------------------------------------------------------------------------------

@dataclass(slots=True, init=False)  # the __init__ below is compiled (generation.Member says why)
class Facts:
    """What the episode row and the what-if both need."""

    members_before: list[Member] | None
    members_after: list[Member] | None
    owners_before: Owners | None
    owners_after: Owners | None
    partitions_total: int | None
    moved: int | None
    revoked: int | None
    loads: tuple[int, int, float] | None

    def __init__(self, members_before: list[Member] | None, members_after: list[Member] | None,
                 owners_before: Owners | None, owners_after: Owners | None, partitions_total: int | None,
                 moved: int | None, revoked: int | None, loads: tuple[int, int, float] | None) -> None:
        self.members_before = members_before
        self.members_after = members_after
        self.owners_before = owners_before
        self.owners_after = owners_after
        self.partitions_total = partitions_total
        self.moved = moved
        self.revoked = revoked
        self.loads = loads


def loads_of(assignment: dict[str, tuple[TP, ...]] | None) -> tuple[int, int, float] | None:
    """(max, min, coefficient of variation) of partitions per member; None without members."""
    if not assignment:
        return None
    sizes = [len(p) for p in assignment.values()]
    mean = sum(sizes) / len(sizes)
    cv = sqrt(sum((s - mean) ** 2 for s in sizes) / len(sizes)) / mean if mean else 0.0
    return max(sizes), min(sizes), cv


def count_moves(before: Owners, after_members: list[Member], before_members: list[Member] | None,
                after_keys: set[str] | None = None) -> int:
    """Partitions whose owner changed between two members both present after (departed owners excluded);
    ``after_keys``: the after members' keys, when the caller has them."""
    previous = {m.key: m.assignment for m in before_members or ()}
    if after_keys is None:
        after_keys = {m.key for m in after_members}
    moved = 0
    owner_of = before.get
    for new in after_members:
        assignment = new.assignment or ()
        key = new.key
        if previous.get(key) == assignment:
            continue  # kept exactly its list
        for tp in assignment:
            old = owner_of(tp)
            if old is not None and old.key != key and old.key in after_keys:
                moved += 1
    return moved


def count_revoked(before: Owners, after: Owners, after_keys: set[str], cooperative: bool) -> int:
    """Eager: every partition owned at the start. Cooperative: those a remaining owner gave up."""
    if not cooperative:
        return len(before)
    revoked = 0
    for tp, old in before.items():
        new = after.get(tp)
        if old.key in after_keys and (new is None or new.key != old.key):
            revoked += 1
    return revoked


def partitions_total(g: Generation, counts: dict[str, int] | None) -> int | None:
    """Partitions of the topics the members subscribe to (or, topics unknown, the assigned ones)."""
    if g.members is None:
        return None
    if counts is not None and all(m.topics is not None for m in g.members):
        return sum(counts.values())
    assignment = g.assignment
    return sum(len(p) for p in assignment.values()) if assignment is not None else None


def facts(ep: Episode, after_counts: dict[str, int] | None) -> Facts:
    """Membership, owners, moves and loads around one episode; ``after_counts`` are the partition
    counts of the topics subscribed in the generation it ended in."""
    after = ep.after
    before = ep.before if ep.before_known else None
    members_before = (before.members if before is not None else []) if ep.before_known else None
    owners_before = (before.owners() if before is not None else {}) if ep.before_known else None
    members_after = after.members if after is not None else None
    owners_after = after.owners() if after is not None else None
    moved = revoked = None
    if owners_before is not None and owners_after is not None and members_after is not None:
        keys = {m.key for m in members_after}
        moved = count_moves(owners_before, members_after, members_before, keys)
        revoked = count_revoked(owners_before, owners_after, keys, ep.cooperative)
    total = partitions_total(after, after_counts) if after is not None else None
    return Facts(members_before, members_after, owners_before, owners_after, total, moved, revoked,
                 loads_of(after.assignment) if after is not None else None)


# --- storms ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StormRules:
    min_episodes: int = 5
    window_s: float = 600.0
    chain_gap_s: float = 10.0
    chain_min_episodes: int = 3


def storms(episodes: list[Episode], rules: StormRules) -> int:
    """Set each episode's ``storm_id``; return the number of storms."""
    timed = [ep for ep in episodes if ep.t_start is not None]
    runs = _window_runs(timed, rules) + _chain_runs(timed, rules)
    runs.sort()
    count = 0
    reach = -1
    for lo, hi in runs:
        if lo > reach:
            count += 1
        for i in range(lo, hi + 1):
            timed[i].storm_id = count
        reach = max(reach, hi)
    return count


def _window_runs(timed: list[Episode], rules: StormRules) -> list[tuple[int, int]]:
    k = rules.min_episodes
    span = rules.window_s * 1_000_000
    starts = [ep.t_start or 0 for ep in timed]
    return [(i, i + k - 1) for i in range(len(timed) - k + 1) if starts[i + k - 1] - starts[i] <= span]


def _chain_runs(timed: list[Episode], rules: StormRules) -> list[tuple[int, int]]:
    gap = rules.chain_gap_s * 1_000_000
    runs: list[tuple[int, int]] = []
    lo = 0
    for i in range(1, len(timed) + 1):
        end = timed[i - 1].t_end
        start = timed[i].t_start if i < len(timed) else None
        if start is not None and end is not None and start - end < gap:
            continue
        if i - lo >= rules.chain_min_episodes:
            runs.append((lo, i - 1))
        lo = i
    return runs
