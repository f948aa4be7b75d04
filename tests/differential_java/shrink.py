"""Greedy shrinking of a mismatching assignor case, so a failure prints a small reproducer."""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Case = dict[str, Any]


def _without_member(case: Case, index: int) -> Case:
    smaller = copy.deepcopy(case)
    del smaller["members"][index]
    return smaller


def _sticky_user_data_claims(data: bytes) -> set[tuple[str, int]]:
    """Partitions named in ``StickyAssignor`` user data (V0/V1 layout); empty if unreadable."""
    claims: set[tuple[str, int]] = set()
    try:
        (topics,), pos = struct.unpack_from(">i", data), 4
        for _ in range(topics):
            (length,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2 : pos + 2 + length].decode("utf-8")
            pos += 2 + length
            (count,) = struct.unpack_from(">i", data, pos)
            claims.update((topic, p) for p in struct.unpack_from(f">{count}i", data, pos + 4))
            pos += 4 + 4 * count
    except (struct.error, UnicodeDecodeError, ValueError):
        return set()
    return claims


def _claimed(case: Case) -> set[tuple[str, int]]:
    claims: set[tuple[str, int]] = set()
    for member in case["members"]:
        claims.update((t, p) for t, p in member.get("owned", []))
        if case["assignor"] == "sticky" and member.get("user_data"):
            claims |= _sticky_user_data_claims(bytes.fromhex(member["user_data"]))
    return claims


def _candidates(case: Case) -> Iterator[Case]:
    """Smaller variants, biggest cuts first.

    A partition is only removed from metadata when nobody claims it, so shrinking never turns
    a case into one about owned partitions that no longer exist (a different kind of input).
    """
    if len(case["members"]) > 1:
        for i in range(len(case["members"])):
            yield _without_member(case, i)
    claimed = _claimed(case)
    for t, topic in enumerate(case["topics"]):
        if topic["partitions"] and (topic["name"], len(topic["partitions"]) - 1) not in claimed:
            smaller = copy.deepcopy(case)
            smaller["topics"][t]["partitions"].pop()
            yield smaller
    for i, member in enumerate(case["members"]):
        for j in range(len(member.get("owned", []))):
            smaller = copy.deepcopy(case)
            del smaller["members"][i]["owned"][j]
            yield smaller
        for field in ("instance_id", "rack", "generation", "user_data"):
            if member.get(field) is not None:
                smaller = copy.deepcopy(case)
                smaller["members"][i][field] = None
                yield smaller
    if any(b.get("rack") is not None for b in case["brokers"]):
        smaller = copy.deepcopy(case)
        for broker in smaller["brokers"]:
            broker["rack"] = None
        yield smaller


def shrink_case(case: Case, still_fails: Callable[[Case], bool], budget: int = 400) -> Case:
    """A client-side assign case shrunk by members, owned partitions, optional fields and racks."""
    if case.get("kind") != "assign":
        return case
    return shrink_greedy(case, _candidates, still_fails, budget)


def shrink_greedy(case: Case, smaller: Callable[[Case], Iterable[Case]], still_fails: Callable[[Case], bool],
                  budget: int) -> Case:
    """Apply the first ``smaller`` variant that still fails, until none does (or ``budget`` runs ends); the
    server-assignor differential shrinks its cases with the same loop."""
    current = case
    progress = True
    while progress and budget > 0:
        progress = False
        for candidate in smaller(current):
            budget -= 1
            if still_fails(candidate):
                current, progress = candidate, True
                break
            if budget <= 0:
                break
    return current
