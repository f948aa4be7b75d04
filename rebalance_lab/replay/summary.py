"""The ``group_summary`` row of one group (spec/replay-inputs.md §7.2, §7.3).

* Percentiles of ``join_ms`` and ``total_ms`` over the episodes where they are known: the
  nearest-rank method by default (the smallest value with at least p% of the values at or below
  it; always an observed value), or linear interpolation between closest ranks
  (``ReplayOptions(percentile="linear")``, NumPy's default).
* ``members_joined``/``members_left``: distinct member ids in ``MEMBER_JOINED`` and in
  ``MEMBER_LEFT``/``MEMBER_SESSION_EXPIRED``/``MEMBERS_DROPPED_NOT_REJOINED`` events (KIP-848: leaves
  but a static member's temporary one, and fences); without
  such events (offsets dumps), the episodes' ``members_in``/``members_out``.
* Static membership: ``static_rejoins_without_rebalance`` counts ``STATIC_MEMBER_REJOINED``
  events (the broker's "will not trigger rebalance" line), else the ``STATIC_MEMBER_REPLACED``
  events that happened while the group was stable; ``static_rejoin_rebalances`` counts episodes
  triggered by ``static_rejoin_metadata``.
* ``coordinator_moves``: changes of the coordinating broker (``broker_id``) along the group's
  events; without broker ids, the ``GROUP_UNLOADED`` events.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import ceil
from typing import Any

from rebalance_lab.replay.static import replacement_kind
from rebalance_lab.replay.timeline import Timeline

_LEFT = frozenset({"MEMBER_LEFT", "MEMBER_SESSION_EXPIRED", "K848_MEMBER_LEFT", "K848_MEMBER_FENCED"})
_STAYED = "static_temporary_leave"  # a KIP-848 static member that left temporarily is still a member


def percentile(values: Sequence[float], p: float, method: str = "nearest_rank") -> float | None:
    """The p-th percentile (0 < p <= 100) of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    if method == "linear":
        position = (len(ordered) - 1) * p / 100.0
        lo = int(position)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)
    return ordered[max(0, ceil(p / 100.0 * len(ordered)) - 1)]


def _distinct(events: Iterable[dict[str, Any]], kinds: frozenset[str]) -> set[str]:
    ids: set[str] = set()
    for e in events:
        if e["event_type"] in kinds and e.get("member_id") and e.get("reason_code") != _STAYED:
            ids.add(e["member_id"])
        elif e["event_type"] == "MEMBERS_DROPPED_NOT_REJOINED" and "MEMBER_LEFT" in kinds:
            ids.update(x.strip() for x in (e.get("raw") or "").split(",") if x.strip())
    return ids


def churn(timeline: Timeline, episodes: list[dict[str, Any]]) -> tuple[int, int]:
    joined = _distinct(timeline.member_events, frozenset({"MEMBER_JOINED"}))
    left = _distinct(timeline.member_events, _LEFT)
    if not joined:
        joined = {m for e in episodes for m in e.get("members_in") or ()}
    if not left and not any(e["event_type"] in _LEFT for e in timeline.member_events):
        left = {m for e in episodes for m in e.get("members_out") or ()}
    return len(joined), len(left)


def static_rejoins(timeline: Timeline) -> int:
    if timeline.static_rejoined:
        return len({(e.get("member_id"), e["ts"] // 1000) for e in timeline.static_rejoined})
    replaced = [e for e in timeline.member_events if e["event_type"] == "STATIC_MEMBER_REPLACED"]
    return sum(1 for e in replaced if replacement_kind(e, timeline.generations) == "stable")


def coordinator_moves(timeline: Timeline) -> int:
    moves = 0
    current: int | None = None
    for e in timeline.events:
        broker = e.get("broker_id")
        if broker is None or e.get("source") == "client_log":
            continue
        if current is not None and broker != current:
            moves += 1
        current = broker
    if current is None:
        return sum(1 for e in timeline.coordinator_events if e["event_type"] == "GROUP_UNLOADED")
    return moves


def summary_row(base: dict[str, Any], timeline: Timeline, generations: int, episodes: list[dict[str, Any]],
                storms: int, method: str) -> dict[str, Any]:
    events = timeline.events
    triggers: dict[str, int] = {}
    for e in episodes:
        code = e.get("trigger_code") or "unknown"
        triggers[code] = triggers.get(code, 0) + 1
    join = [e["join_ms"] for e in episodes if e.get("join_ms") is not None]
    total = [e["total_ms"] for e in episodes if e.get("total_ms") is not None]
    joined, left = churn(timeline, episodes)
    moved = [e["partitions_moved"] for e in episodes if e.get("partitions_moved") is not None]
    return {
        **base, "group_kind": timeline.group_kind,
        "first_ts": events[0]["ts"] if events else None, "last_ts": events[-1]["ts"] if events else None,
        "events": len(events), "generations": generations, "episodes": len(episodes), "triggers": triggers,
        "join_ms_p50": percentile(join, 50, method), "join_ms_p95": percentile(join, 95, method),
        "join_ms_p99": percentile(join, 99, method),
        "total_ms_p50": percentile(total, 50, method), "total_ms_p95": percentile(total, 95, method),
        "total_ms_p99": percentile(total, 99, method),
        "storms": storms, "members_joined": joined, "members_left": left,
        "static_rejoins_without_rebalance": static_rejoins(timeline),
        "static_rejoin_rebalances": triggers.get("static_rejoin_metadata", 0),
        "coordinator_moves": coordinator_moves(timeline),
        "partitions_moved": sum(moved) if moved else None,
    }
