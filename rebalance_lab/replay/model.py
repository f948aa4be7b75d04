"""Per-group replay: one group's canonical events in, the rows of every derived table out
(spec/replay-inputs.md §6.5, §7.2-§7.4). Pure Python, no Spark: the Spark pipeline calls
:func:`replay_group` once per ``(cluster_id, group_id)`` inside a ``mapInArrow`` over partitions
clustered by group (:func:`rebalance_lab.replay.tasks.replay_groups`), and
:mod:`rebalance_lab.replay.local` calls it in a plain loop.

The steps, each in its own module:

1. :mod:`.timeline` sorts the events and folds every source into one record per generation;
2. :mod:`.episodes` windows generations into episodes (interruptions and cooperative follow-ups
   merged), finds triggers, counts moves and loads, and marks storms;
3. :mod:`.moves` walks partition ownership from generation to generation (``partition_moves``
   and each episode's ``unowned_partition_ms``);
4. :mod:`.whatif` re-runs the recorded membership under other assignors, and :mod:`.static` under
   static membership;
5. :mod:`.summary` writes the one ``group_summary`` row.

Deterministic: the output depends only on the events (not on their input order) and the options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rebalance_lab.replay import column_types
from rebalance_lab.replay.counts import Inferred, TopicCounts, counts_at, index_for, too_large_reason
from rebalance_lab.replay.episodes import Episode, Facts, StormRules, Triggers, facts, storms, window
from rebalance_lab.replay.moves import ClientTimes, Transitions, transitions
from rebalance_lab.replay.static import Avoidance, Change, unique_identities
from rebalance_lab.replay.summary import summary_row
from rebalance_lab.replay.timeline import Generation, Member, Timeline, fold
from rebalance_lab.replay.whatif import ASSIGNORS, STATIC_SUFFIX, EpisodeInput, Spec, whatif_rows

#: What-if names beyond the plain assignors: static membership under the recorded or a named assignor.
WHATIF_MODES: tuple[str, ...] = ("static", *(f"{name}{STATIC_SUFFIX}" for name in ASSIGNORS))


@dataclass(frozen=True)
class ReplayOptions:
    """Thresholds of the derived metrics (see :mod:`.episodes` and :mod:`.summary`)."""

    storm_min_episodes: int = 5  # K: at least this many episodes ...
    storm_window_s: float = 600.0  # T: ... starting within this many seconds
    storm_chain_gap_s: float = 10.0  # X: or a chain whose next prepare starts sooner than this after an end ...
    storm_chain_min_episodes: int = 3  # ... of at least this many episodes
    percentile: str = "nearest_rank"  # or "linear"

    def storm_rules(self) -> StormRules:
        return StormRules(self.storm_min_episodes, self.storm_window_s, self.storm_chain_gap_s,
                          self.storm_chain_min_episodes)


def _ms(start: int | None, end: int | None) -> float | None:
    return (end - start) / 1000.0 if start is not None and end is not None else None


def _ids(events: list[dict[str, Any]]) -> dict[str, Any]:
    cluster = next((e["cluster_id"] for e in events if e.get("cluster_id") is not None), None)
    group = next((e["group_id"] for e in events if e.get("group_id") is not None), None)
    return {"cluster_id": cluster, "group_id": group}


def _generation_row(base: dict[str, Any], g: Generation) -> dict[str, Any]:
    # the ids (base: _ids) spelled out, not **base: a literal of constant keys is built in one presized step
    return {
        "cluster_id": base["cluster_id"], "group_id": base["group_id"], "generation": g.generation,
        "group_kind": g.group_kind, "episode_id": g.episode_id,
        "t_prepare": g.t_prepare, "t_join_done": g.t_join_done, "t_sync_done": g.t_sync_done,
        "leader_id": g.leader_id, "protocol_type": g.protocol_type, "protocol": g.protocol,
        "n_members": g.n_members, "n_static": g.n_static, "members": g.member_rows,
        "trigger_codes": g.trigger_codes, "completed": None if g.kip848 and g.reconciled is None else g.completed,
        "has_log": g.has_log,
        "has_snapshot": g.has_snapshot, "sources": sorted(g.sources),
    }


def _counts(episodes: list[Episode], metadata: TopicCounts, unknown: dict[int, str]) -> dict[int, dict[str, int]]:
    """Partition counts of each generation's subscribed topics, at its sync (else join/prepare) time,
    with the partitions recorded so far as a floor; ``unknown`` gets why a generation has no what-if
    (a topic counted beyond the what-if's bound)."""
    inferred = Inferred()
    result: dict[int, dict[str, int]] = {}
    too_large: dict[str, int] = {}  # one, emptied after each use (almost always empty)
    for ep in episodes:
        for g in ep.gens:
            topics: set[str] = set()
            for m in g.members or ():
                inferred.add(m.assignment or ())  # (owned partitions were all assigned before)
                topics.update(m.topics or ())
            ts = g.t_sync_done or g.t_join_done or g.t_prepare
            result[g.generation] = counts_at(sorted(topics), ts, metadata, inferred, too_large)
            if too_large:
                unknown[g.generation] = too_large_reason(too_large)
                too_large.clear()
    return result


def _member_ids(members: list[Member] | None) -> list[str] | None:
    return [m.member_id for m in members] if members is not None else None


def _diff(before: list[Member] | None, after: list[Member] | None) -> tuple[list[Member], list[Member]] | None:
    """(members in, members out), compared by :attr:`Member.key`: a static member replaced under a new
    member id (same group.instance.id) neither left nor joined."""
    if before is None or after is None:
        return None
    before_keys = {m.key for m in before}
    after_keys = {m.key for m in after}
    return [m for m in after if m.key not in before_keys], [m for m in before if m.key not in after_keys]


def _unowned(ep: Episode, f: Facts, moves: Transitions) -> float | None:
    if ep.episode_id in moves.known:
        return moves.unowned_ms.get(ep.episode_id, 0.0)
    total = _ms(ep.t_start, ep.t_end)
    eager = ep.protocol is not None and not ep.cooperative
    if eager and total is not None and f.partitions_total is not None:
        return f.partitions_total * total  # every partition waits the whole episode (bounds only)
    return None


Trigger = tuple[str | None, str | None]


def _episode_row(base: dict[str, Any], ep: Episode, f: Facts, moves: Transitions, trigger: Trigger) -> dict[str, Any]:
    first = next((g for g in ep.gens if g.completed), None)  # the first completed generation
    change = _diff(f.members_before, f.members_after)
    return {  # (the ids spelled out, as in _generation_row)
        "cluster_id": base["cluster_id"], "group_id": base["group_id"], "episode_id": ep.episode_id,
        "first_gen": ep.gens[0].generation, "last_gen": ep.gens[-1].generation,
        "n_generations": len(ep.gens), "t_start": ep.t_start, "t_end": ep.t_end,
        "join_ms": _ms(ep.t_start, first.t_join_done) if first is not None else None,
        "sync_ms": _ms(first.t_join_done, first.t_sync_done) if first is not None else None,
        "total_ms": _ms(ep.t_start, ep.t_end), "trigger_code": trigger[0], "trigger_member": trigger[1],
        "members_before": len(f.members_before) if f.members_before is not None else None,
        "members_after": len(f.members_after) if f.members_after is not None else None,
        "members_in": _member_ids(change[0]) if change else None,
        "members_out": _member_ids(change[1]) if change else None,
        "protocol": ep.protocol, "partitions_total": f.partitions_total, "partitions_moved": f.moved,
        "partitions_revoked": f.revoked, "unowned_partition_ms": _unowned(ep, f, moves),
        "max_load": f.loads[0] if f.loads else None, "min_load": f.loads[1] if f.loads else None,
        "load_cv": f.loads[2] if f.loads else None, "storm_id": ep.storm_id,
    }


def _avoided(timeline: Timeline, episodes: list[Episode], all_facts: list[Facts]) -> frozenset[int]:
    changes: list[Change] = []
    for ep, f in zip(episodes, all_facts, strict=True):
        change = _diff(f.members_before, f.members_after)
        usable = (change is not None and f.members_before is not None and f.members_after is not None
                  and unique_identities(f.members_before) and unique_identities(f.members_after))
        if not usable or change is None:
            changes.append(Change(ep.episode_id, ep.t_start, (), ()))  # never avoided
            continue
        changes.append(Change(ep.episode_id, ep.t_start, change[0], change[1]))
    return frozenset(Avoidance(timeline).avoided(changes))


def replay_group(events: list[dict[str, Any]], topics: list[dict[str, Any]], *, whatif: Sequence[str] = (),
                 options: ReplayOptions | None = None) -> dict[str, Sequence[dict[str, Any]]]:
    """Rows of every table in :data:`column_types.TABLE_COLUMNS` for one group's events (``group_summary``: one row);
    ``partition_moves`` is a :class:`~.rows.TupleRows` (it reads as row dicts).

    ``events``: all canonical events of one ``(cluster_id, group_id)``, any sources, any order.
    ``topics``: the ``TOPIC_METADATA`` events of its cluster. ``whatif``: assignor names
    (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``), each optionally with ``+static``,
    or ``static``.
    """
    options = options or ReplayOptions()
    specs = [Spec.parse(name) for name in whatif]  # fail fast on a bad name
    timeline = fold(events)
    base = _ids(timeline.events)
    gens = timeline.sorted_generations()
    episodes = window(gens)
    n_storms = storms(episodes, options.storm_rules())
    unknown: dict[int, str] = {}
    counts = _counts(episodes, index_for(topics), unknown)
    starts = {ep.episode_id: ep.t_start or 0 for ep in episodes}
    moves = transitions(gens, base, starts, ClientTimes(timeline.client_partitions, timeline.member_times))
    triggers = Triggers(timeline)
    all_facts: list[Facts] = []
    episode_rows: list[dict[str, Any]] = []
    since: int | None = None
    for ep in episodes:
        after = ep.after
        f = facts(ep, counts.get(after.generation) if after is not None else None)
        all_facts.append(f)
        episode_rows.append(_episode_row(base, ep, f, moves, triggers.of(ep, since)))
        since = ep.t_end or since
    items = [EpisodeInput(ep, f, counts, unknown) for ep, f in zip(episodes, all_facts, strict=True)]
    avoided = _avoided(timeline, episodes, all_facts) if any(s.static for s in specs) else frozenset()
    whatif_out: list[dict[str, Any]] = []
    for name in whatif:
        whatif_out.extend(whatif_rows(name, items, base, avoided))
    result: dict[str, Sequence[dict[str, Any]]] = {
        "group_generations": [_generation_row(base, g) for g in gens],
        "rebalance_episodes": episode_rows,
        "partition_moves": moves.rows,
        "whatif_results": whatif_out,
        "group_summary": [summary_row(base, timeline, len(gens), episode_rows, n_storms, options.percentile)],
    }
    assert result.keys() == column_types.TABLE_COLUMNS.keys()
    return result
