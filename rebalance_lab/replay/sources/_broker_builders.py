"""Builders: a coordinator message's match to its canonical event (split from broker_log.py).

One function per message kind of :mod:`._broker_lines` (the mapping table is broker_log.py's
docstring); :data:`DISPATCH` joins each kind's literal rule, regex and builder for the parser.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from rebalance_lab.replay.sources._broker_lines import (
    PATTERNS,
    RULES,
    Event,
    epoch_tp_list,
    id_set,
    option_value,
    reason_fields,
)

# --- builders: (match, event) -> event, or None to ignore -------------------------------------------------------

Builder = Callable[[re.Match[str], Event], Event | None]


def _prepare(m: re.Match[str], ev: Event) -> Event:
    old = int(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "REBALANCE_PREPARE"
    ev["prev_generation"] = old
    ev["generation"] = old + 1
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    if m[4] is not None:
        reason_fields(m[4], ev)
    return ev


def _stabilized(m: re.Match[str], ev: Event) -> Event:
    generation = int(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "JOIN_COMPLETE"
    ev["generation"] = generation
    ev["prev_generation"] = generation - 1
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    if m[4] is not None:
        ev["n_members"] = int(m[4])
    return ev


def _sync(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "SYNC_LEADER_ASSIGNMENT"
    ev["generation"] = int(m[3])
    if m[1] is not None:
        ev["leader_id"] = sys.intern(m[1])
    if m[4] is not None:
        ev["n_members"] = int(m[4])
        ev["n_static"] = int(m[5])
    return ev


def _empty(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_EMPTY"
    ev["generation"] = int(m[2])
    ev["n_members"] = 0
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    return ev


def _dropped(m: re.Match[str], ev: Event) -> Event:
    ids = id_set(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "MEMBERS_DROPPED_NOT_REJOINED"
    ev["raw"] = ",".join(ids)
    ev["n_members"] = len(ids)
    return ev


def _dead(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_DEAD"
    ev["generation"] = int(m[2])
    return ev


def _expired(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "MEMBER_SESSION_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "session_timeout"
    return ev


def _leave_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[8]
    ev["event_type"] = "MEMBER_LEFT"
    ev["member_id"] = m[1]
    instance = option_value(m[2])
    ev["group_instance_id"] = None if instance is None else sys.intern(instance)
    ev["client_id"] = sys.intern(m[3])
    ev["client_host"] = sys.intern(m[4])
    ev["session_timeout_ms"] = int(m[5])
    ev["rebalance_timeout_ms"] = int(m[6])
    ev["supported_protocols"] = [p for p in m[7].split(", ") if p]
    ev["reason_code"] = "member_leave"
    if m[9] is not None:
        ev["client_reason"] = m[9]
    return ev


def _pending_expired(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "PENDING_MEMBER_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "timeout"
    return ev


def _pending_leave_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "PENDING_MEMBER_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "leave"
    if m[3] is not None:
        ev["client_reason"] = m[3]
    return ev


def _pending_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[1]
    return ev


def _dynamic_join(m: re.Match[str], ev: Event) -> Event:
    if m[4].startswith("and request"):  # KIP-394 step 1: the member must rejoin with this id
        ev["group_id"] = m[1]
        ev["event_type"] = "MEMBER_JOIN_REQUEST"
        ev["member_id"] = m[3]
        ev["reason_code"] = "member_id_required"
    else:
        ev["group_id"] = m[1]
        ev["event_type"] = "MEMBER_JOINED"
        ev["member_id"] = m[3]
    return ev


def _static_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["group_instance_id"] = sys.intern(m[1])
    if m[4] is not None:
        ev["event_type"] = "STATIC_MEMBER_REPLACED"
        ev["raw"] = f"replaced {m[4]}"
    else:
        ev["event_type"] = "MEMBER_JOINED"
        ev["member_id"] = m[5]
    return ev


def _leave_java(m: re.Match[str], ev: Event) -> Event:
    kind = m[2]
    ev["group_id"] = m[1]
    ev["member_id"] = m[3]
    ev["client_reason"] = m[5]
    if kind == "Pending":
        ev["event_type"] = "PENDING_MEMBER_EXPIRED"
        ev["reason_code"] = "leave"
        return ev
    ev["event_type"] = "MEMBER_LEFT"
    ev["reason_code"] = "member_leave"
    if m[4] is not None:
        ev["group_instance_id"] = sys.intern(m[4])
    if kind is not None:  # "Dynamic"/"Static Member": a classic member of a consumer group
        ev["group_kind"] = "consumer"
    return ev


def _k848_epoch(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_EPOCH_BUMP"
    ev["generation"] = int(m[2])
    return ev


def _k848_target(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_TARGET_COMPUTED"
    ev["generation"] = int(m[2])
    if m[3] is not None:
        ev["protocol"] = sys.intern(m[3])
    return ev


def _k848_state(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_STATE"
    ev["member_id"] = m[2]
    ev["generation"] = int(m[3])
    ev["prev_generation"] = int(m[4])
    ev["raw"] = m[5]
    ev["partitions"] = epoch_tp_list(m[6])
    if m[7] is not None:
        ev["partitions_pending_revocation"] = epoch_tp_list(m[7])
    return ev


def _k848_transition(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_STATE"
    ev["member_id"] = m[2]
    ev["generation"] = int(m[3])
    ev["prev_generation"] = int(m[4])
    ev["raw"] = m[5]
    return ev


def _k848_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[2]
    if m[3] is not None:
        ev["group_instance_id"] = sys.intern(m[3])
    return ev


def _k848_topics(m: re.Match[str], ev: Event) -> Event:
    """A member's new subscription (INFO in 3.7, DEBUG since): an upsert of the member, as the dump's member record."""
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[2]
    topics = [sys.intern(t) for t in m[3].split(", ") if t]
    ev["subscription"] = {"topics": topics, "owned": None, "generation": None, "rack": None}
    return ev


def _k848_rejoin(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["group_instance_id"] = sys.intern(m[3])
    if m[4] is not None:
        ev["event_type"] = "STATIC_MEMBER_REPLACED"
        ev["member_id"] = m[4]
        ev["raw"] = f"replaced {m[5]}"
    else:
        ev["event_type"] = "STATIC_MEMBER_REJOINED"
        ev["member_id"] = m[2]
    return ev


def _k848_left(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_LEFT"
    ev["member_id"] = m[2]
    ev["reason_code"] = "static_temporary_leave" if m[4] else "member_leave"
    if m[3] is not None:
        ev["group_instance_id"] = sys.intern(m[3])
    return ev


_FENCE_CODES = (("session expired", "session_timeout"), ("within the rebalance timeout", "rebalance_timeout"),
                ("failed to transition from epoch", "rebalance_timeout"), ("failed to revoke", "rebalance_timeout"),
                ("failed to sync", "sync_timeout"))


def _k848_fenced(m: re.Match[str], ev: Event) -> Event:
    reason = m[3]
    code = next((code for needle, code in _FENCE_CODES if needle in reason), "other")
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_FENCED"
    ev["member_id"] = m[2]
    ev["reason_raw"] = reason
    ev["reason_code"] = code
    return ev


def _unload_java(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_UNLOADED"
    ev["generation"] = int(m[3])
    if m[2] is not None:  # "group epoch": a consumer group
        ev["group_kind"] = "consumer"
    return ev


def _load_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_LOADED"
    ev["generation"] = int(m[2])
    return ev


def _unload_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_UNLOADED"
    ev["generation"] = int(m[2])
    return ev


def _loaded_java(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["group_kind"] = m[1]
    ev["event_type"] = "GROUP_LOADED"
    ev["n_members"] = int(m[3])
    return ev


_BUILDERS: dict[str, Builder] = {
    "prepare": _prepare, "stabilized": _stabilized, "sync": _sync, "empty": _empty, "dropped": _dropped,
    "dead": _dead, "expired": _expired, "leave_scala": _leave_scala, "pending_expired": _pending_expired,
    "pending_leave_scala": _pending_leave_scala, "pending_join": _pending_join, "dynamic_join": _dynamic_join,
    "static_join": _static_join, "leave_java": _leave_java, "k848_epoch": _k848_epoch,
    "k848_target": _k848_target, "k848_state": _k848_state, "k848_transition": _k848_transition,
    "k848_join": _k848_join, "k848_topics": _k848_topics, "k848_rejoin": _k848_rejoin, "k848_left": _k848_left,
    "k848_fenced": _k848_fenced,
    "unload_java": _unload_java, "load_scala": _load_scala, "unload_scala": _unload_scala,
    "loaded_java": _loaded_java,
}
#: RULES with each kind's pattern and builder (None: static_rejoin, which needs the parser's state)
DISPATCH: dict[str, tuple[tuple[str, str, re.Pattern[str], Builder | None], ...]] = {
    word: tuple((needle, kind, PATTERNS[kind], _BUILDERS.get(kind)) for needle, kind in rules)
    for word, rules in RULES.items()
}
