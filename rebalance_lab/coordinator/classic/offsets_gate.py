"""The group-side checks of the offset APIs (spec §12), for the offsets module to call.

Only the *group* part lives here: topic/partition pre-checks (KafkaApis) and the
per-partition rules belong to the offsets handlers, which must call
:func:`validate_offset_commit` only when at least one partition survived them (trap §16.12).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.rebalance import schedule_heartbeat
from rebalance_lab.coordinator.classic.records import GroupCreated
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

_E = ErrorCode


def validate_offset_commit(core: Core, fx: Effects, now_ms: int, group_id: str, member_id: str,
                           generation_id: int, group_instance_id: str | None, api_version: int,
                           transactional: bool = False) -> ErrorCode:
    """``OMM.validateOffsetCommit`` + ``CG.validateOffsetCommit``; an accepted commit in Stable or
    PreparingRebalance resets the member's session timer. A transactional commit
    (``validateTransactionalOffsetCommit``) answers ILLEGAL_GENERATION for an unknown group with a
    generation, needs no member id or generation (old TxnOffsetCommit versions carry none) and is
    not refused while the group completes a rebalance."""
    group = core.groups.get(group_id)
    if group is None:
        if transactional and core.java and generation_id >= 0:
            return _E.ILLEGAL_GENERATION
        if generation_id >= 0 and not transactional:  # Scala's TxnOffsetCommit creates the group (3.9.2)
            # Java v9+ GROUP_ID_NOT_FOUND; older versions and Scala: ILLEGAL_GENERATION (§15 #8).
            return _E.GROUP_ID_NOT_FOUND if core.java and api_version >= 9 else _E.ILLEGAL_GENERATION
        group = Group(group_id, core.flavor, now_ms)  # a "simple" group: Empty, no protocol type
        core.groups[group_id] = group
        fx.record(GroupCreated(group_id, now_ms, "offset_commit"))
    error = _validate_commit_member(group, member_id, generation_id, group_instance_id, transactional)
    if error is not _E.NONE or transactional:
        return error
    if group.state is GroupState.COMPLETING_REBALANCE:
        return _E.REBALANCE_IN_PROGRESS  # after the member/generation checks: stale generations get 22
    member = group.members.get(member_id)
    if member is not None and group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
        schedule_heartbeat(core, group, member_id, now_ms, member.session_timeout_ms)
    return _E.NONE


def _validate_commit_member(group: Group, member_id: str, generation_id: int,
                            group_instance_id: str | None, transactional: bool = False) -> ErrorCode:
    if group.state is GroupState.DEAD:
        return _E.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return _E.NONE  # admin / simple commit: member and instance ids are not checked (trap §16.12)
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        error = group.validate_member(member_id, group_instance_id)
        if error is not _E.NONE:
            return error
        return _E.NONE if generation_id == group.generation_id else _E.ILLEGAL_GENERATION
    return _E.NONE if transactional else _E.UNKNOWN_MEMBER_ID


def validate_offset_fetch(core: Core, group_id: str) -> ErrorCode:
    """Unknown or Dead groups are no error for OffsetFetch (§12.2); member id/epoch are ignored
    for classic groups, so the group side never rejects a fetch."""
    del core, group_id
    return _E.NONE


@dataclass(frozen=True)
class OffsetDeleteCheck:
    """The group side of OffsetDelete (§12.3)."""

    error: ErrorCode
    subscribed_topics: frozenset[str] = frozenset()
    subscribed_to_all: bool = False  # metadata not parseable and protocol type "consumer"

    def is_subscribed(self, topic: str) -> bool:
        return self.subscribed_to_all or topic in self.subscribed_topics


def validate_offset_delete(core: Core, group_id: str) -> OffsetDeleteCheck:
    group = core.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        return OffsetDeleteCheck(_E.GROUP_ID_NOT_FOUND)
    if group.state is not GroupState.EMPTY and group.protocol_type != "consumer":
        return OffsetDeleteCheck(_E.NON_EMPTY_GROUP)
    if group.state is GroupState.EMPTY:
        return OffsetDeleteCheck(_E.NONE)  # an Empty group is subscribed to nothing
    topics: set[str] = set()
    for member in group.members.values():
        parsed = subscription_topics(member.metadata_for(group.protocol_name))
        if parsed is None:
            return OffsetDeleteCheck(_E.NONE, frozenset(), group.protocol_type == "consumer")
        topics.update(parsed)
    return OffsetDeleteCheck(_E.NONE, frozenset(topics))


def subscription_topics(metadata: bytes) -> list[str] | None:
    """The topics of a consumer Subscription's v0 prefix (int16 version, array of strings)."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        offset, topics = 6, []
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", metadata, offset)
            raw = metadata[offset + 2: offset + 2 + length]
            if len(raw) != length:
                return None
            topics.append(raw.decode("utf-8"))
            offset += 2 + length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
