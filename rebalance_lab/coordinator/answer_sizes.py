"""How big an answer is, and freeing big messages in slices (the shell's helpers for big requests, issue 17).

:func:`is_large` says whether an answer lists enough entries that encoding it would hold the loop (the server then
encodes it in its codec thread); :func:`release` frees a big request's and answer's lists a slice at a time,
yielding to the loop in between. Split from ``server.py``, which keeps the sockets and the turns.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from rebalance_lab.protocol import classic_group_codec, classic_heartbeat_codec, heartbeat_codec

_LARGE_RESPONSE_ENTRIES = 2_000  # topics or partitions in an answer worth encoding in the codec thread
# A leader's member list: the fast JoinGroup encoder writes ~1.3 us a member (~13 ms at 10,000), a loop hold of the
# order of what the generic codec takes for far fewer than 2,000 entries. Encoded on the loop, the leader's answer
# leaves first when its join completes (members answered in order, the leader usually first) instead of after every
# follower's answer and a turn of the codec thread, so the leader's SyncGroup, which every member's answer waits
# for, arrives while the followers' are read (issue 22: ~0.4-1.2 s of a 10,000-member rebalance waited on it).
_LARGE_MEMBER_LISTS = 20_000
_RELEASE_SLICE = 2_000  # entries of a big message freed between two turns of the loop
# Answers without lists of topics or partitions (the heartbeats' fast-path answers): is_large is not asked
_ANSWERS_NEVER_LARGE: frozenset[type] = frozenset({heartbeat_codec.HeartbeatResponse,
                                                   classic_heartbeat_codec.HeartbeatResponse,
                                                   classic_group_codec.SyncGroupResponse})


def is_large(body: Any) -> bool:
    """Whether an answer lists enough entries (at any depth: topics, partitions, ACL resources, members'
    partitions) that encoding it would hold the loop; stops counting once it knows."""
    kind = type(body)
    if kind in _ANSWERS_NEVER_LARGE:
        return False
    if kind is classic_group_codec.JoinGroupResponse:  # its one list: the leader's member list
        return len(body.members) > _LARGE_MEMBER_LISTS
    return _entries(body, 0, _DEPTH) > _LARGE_RESPONSE_ENTRIES


_SLOTS: dict[type, tuple[str, ...]] = {}  # the slot names of each message class (kafka-python's containers)
_CONTAINERS: dict[type, tuple[str, ...]] = {}
_DEPTH = 5  # answer -> groups -> members -> assignment -> topics -> partitions (ConsumerGroupDescribe)
_SCALARS = (int, float, str, bytes, bytearray, memoryview, set, frozenset, uuid.UUID, type(None))


def _names(message: Any) -> tuple[str, ...]:
    names = _SLOTS.get(type(message))
    if names is None:
        names = _SLOTS[type(message)] = tuple(n for c in type(message).__mro__ for n in c.__dict__.get("__slots__", ()))
    return names + tuple(message.__dict__) if hasattr(message, "__dict__") else names


def _containers(entry: Any) -> tuple[str, ...]:
    """The fields of an entry's class that hold lists or structs (as seen in the first entry of that class)."""
    names = _CONTAINERS.get(type(entry))
    if names is None:
        names = _CONTAINERS[type(entry)] = tuple(n for n in _names(entry)
                                                 if not isinstance(getattr(entry, n, None), _SCALARS))
    return names


def _fields(message: Any) -> list[Any]:
    """The field values of a message object, whatever the codec's class (slots or a ``__dict__``)."""
    if isinstance(message, _SCALARS):
        return []
    return [getattr(message, name, None) for name in _names(message)]


def _entries(message: Any, total: int, depth: int) -> int:
    """``total`` plus the list entries of ``message`` down to ``depth`` levels, or more than the limit."""
    for value in _fields(message):
        total = _value_entries(value, total, depth)
        if total > _LARGE_RESPONSE_ENTRIES:
            break
    return total


def _value_entries(value: Any, total: int, depth: int) -> int:
    if isinstance(value, list):
        total += len(value)
        if depth == 0 or not value or isinstance(value[0], _SCALARS):
            return total
        # The entries of a list share a shape: only the fields that hold lists or structs in the first are
        # looked at (60 ApiVersions entries cost nothing; topics are looked at for their partitions)
        inner = _containers(value[0])
        for item in value if inner else ():
            for name in inner:
                total = _value_entries(getattr(item, name, None), total, depth - 1)
            if total > _LARGE_RESPONSE_ENTRIES:
                break
        return total
    if depth > 0 and not isinstance(value, _SCALARS):
        return _entries(value, total, depth - 1)  # a nested struct (a member's assignment)
    return total


async def release(*messages: Any) -> None:
    """Free a big request's and answer's entries a slice at a time, yielding in between.

    Freeing 250,000 topic entries at once is one C call that holds the GIL for 100-200 ms: the loop
    would stall after the answer as it no longer does before it. Lists inside the entries of a short
    list are freed first (a few topics of 10,000 partitions each, a group's members' partitions).
    """
    for message in messages:
        await _release_lists(message, _DEPTH)


async def _release_lists(message: Any, depth: int) -> None:
    for value in _fields(message):
        if isinstance(value, list):
            for item in value if depth > 0 and len(value) <= _RELEASE_SLICE else ():
                if isinstance(item, _SCALARS):
                    break
                await _release_lists(item, depth - 1)
            await _release_list(value)
        elif depth > 0 and not isinstance(value, _SCALARS):
            await _release_lists(value, depth - 1)


async def _release_list(items: list[Any]) -> None:
    while len(items) > _RELEASE_SLICE:
        del items[-_RELEASE_SLICE:]
        await asyncio.sleep(0)
