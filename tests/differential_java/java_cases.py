"""Seeded random case generators for the Java differential tests.

Every generator takes a ``random.Random`` and returns plain JSON-able dicts in the format of
tests/java_oracle.py, so a failing case can be printed, pasted and replayed on both sides.
"""

from __future__ import annotations

import random
import struct
from typing import Any

Case = dict[str, Any]

_RACK_NAMES = ["a", "b", "c", "d", "rack-1", "rack-2", "us-east-1a", "us-east-1b", "é", "z9"]
_TOPIC_STYLES = ["t{}", "topic-{}", "orders.{}", "x{}y", "T_{}"]


# --------------------------------------------------------------------------- producer


def random_key(rng: random.Random) -> bytes:
    """Byte strings around the 4-byte block boundary, plus longer and textual ones."""
    kind = rng.random()
    if kind < 0.5:
        return rng.randbytes(rng.randint(0, 12))
    if kind < 0.8:
        return rng.randbytes(rng.randint(13, 200))
    text = "".join(rng.choice("abcxyz019-_ é日本🙂") for _ in range(rng.randint(0, 20)))
    return text.encode("utf-8")


def murmur2_case(rng: random.Random) -> Case:
    return {"kind": "murmur2", "key": random_key(rng).hex()}


def partition_case(rng: random.Random) -> Case:
    n = rng.choice([1, 2, 3, 6, 10, 12, 100, rng.randint(1, 5000)])
    return {"kind": "partition", "key": random_key(rng).hex(), "num_partitions": n}


def roundrobin_partitioner_case(rng: random.Random) -> Case:
    n = rng.randint(1, 12)
    available = sorted(p for p in range(n) if rng.random() < 0.7)
    return {"kind": "roundrobin_partitioner", "num_partitions": n, "available": available, "calls": 40}


# --------------------------------------------------------------------------- placement


def _broker_ids(rng: random.Random, n: int) -> list[int]:
    ids = rng.sample(range(0, 3 * n + 5), n) if rng.random() < 0.5 else list(range(n))
    if rng.random() < 0.7:
        ids.sort()  # ZooKeeper-era callers pass brokers sorted by id
    return ids


def adminutils_case(rng: random.Random) -> Case:
    n = rng.randint(1, 12)
    ids = _broker_ids(rng, n)
    mode = rng.random()
    racks: list[str | None]
    if mode < 0.4:
        racks = [None] * n
    elif mode < 0.95:
        pool = rng.sample(_RACK_NAMES, rng.randint(1, min(n, 5)))
        racks = [rng.choice(pool) for _ in ids]
    else:
        racks = [rng.choice([None, "a", "b"]) for _ in ids]  # usually "not all brokers have racks"
    requests = []
    for _ in range(rng.randint(1, 3)):
        request: dict[str, int] = {
            "partitions": rng.choice([rng.randint(1, 60), rng.randint(1, 8), 0 if rng.random() < 0.05 else 1]),
            "rf": rng.randint(1, n) if rng.random() < 0.93 else rng.choice([0, n + 1]),
            "fixed_start_index": -1,
            "start_partition_id": -1,
        }
        if rng.random() < 0.3:
            request["fixed_start_index"] = rng.randint(0, n - 1)
            request["start_partition_id"] = rng.choice([-1, 0, rng.randint(1, 30)])
        requests.append(request)
    return {
        "kind": "adminutils",
        "seed": rng.randint(-(2**63), 2**63 - 1),
        "brokers": [{"id": i, "rack": r} for i, r in zip(ids, racks, strict=True)],
        "requests": requests,
    }


def striped_case(rng: random.Random) -> Case:
    n = rng.randint(1, 12)
    ids = _broker_ids(rng, n)
    if rng.random() < 0.5:
        rng.shuffle(ids)  # the heartbeat manager's map order: arbitrary
    pool: list[str | None] = list(rng.sample(_RACK_NAMES, rng.randint(1, 5)))
    if rng.random() < 0.3:
        pool.append(None)
    no_racks = rng.random() < 0.3
    fenced_rate = rng.choice([0.0, 0.0, 0.2, 0.5, 1.0 if rng.random() < 0.1 else 0.3])
    brokers = [
        {"id": i, "rack": None if no_racks else rng.choice(pool), "fenced": rng.random() < fenced_rate} for i in ids
    ]
    requests = [
        {
            "partitions": rng.choice([rng.randint(1, 40), rng.randint(0, 5)]),
            "rf": rng.randint(1, n) if rng.random() < 0.93 else rng.choice([0, -1, n + 1]),
        }
        for _ in range(rng.randint(1, 3))
    ]
    return {
        "kind": "striped",
        "random": rng.choice(["java", "java", "mock"]),
        "seed": rng.randint(-(2**63), 2**63 - 1),
        "brokers": brokers,
        "requests": requests,
    }


# --------------------------------------------------------------------------- assignors


def _member_count(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.55:
        return rng.randint(1, 6)
    if roll < 0.9:
        return rng.randint(7, 20)
    return rng.randint(21, 50)


def _member_ids(rng: random.Random, n: int) -> list[str]:
    style = rng.randrange(4)
    if style == 0:
        ids = [f"consumer-{i}" for i in range(1, n + 1)]
    elif style == 1:
        ids = [f"c{i}" for i in range(n)]
    elif style == 2:
        ids = [f"member-{i}" for i in range(n)]
    else:
        ids = [f"client-{i}-{rng.getrandbits(64):016x}" for i in range(n)]
    rng.shuffle(ids)  # JoinGroup response order is arbitrary
    return ids


def _topics(rng: random.Random, max_partitions: int) -> dict[str, int]:
    count = rng.choice([1, 1, 2, 3, rng.randint(1, 8), rng.randint(1, 12)])
    style = rng.choice(_TOPIC_STYLES)
    names = [style.format(i) for i in range(count)]
    rng.shuffle(names)
    budget = rng.choice([max_partitions, rng.randint(1, 60), rng.randint(1, 200)])
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = rng.randint(1, max(1, min(64, budget // max(1, count) * 2)))
    total = sum(counts.values())
    if total > max_partitions:  # scale down to the cap
        counts = {t: max(1, c * max_partitions // total) for t, c in counts.items()}
    return counts


def _cluster(rng: random.Random, counts: dict[str, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Brokers with racks (or none) and each partition's replica list."""
    n_brokers = rng.choice([0, 1, 3, 3, 4, 6])
    with_racks = rng.random() < 0.6
    pool = rng.sample(_RACK_NAMES, rng.randint(1, 4))
    brokers = [
        {"id": i, "rack": (rng.choice(pool) if with_racks and rng.random() < 0.95 else None)} for i in range(n_brokers)
    ]
    topics = []
    for name, count in counts.items():
        rf = min(n_brokers, rng.choice([1, 1, 2, 3]))
        partitions = [rng.sample(range(n_brokers), rf) for _ in range(count)]
        topics.append({"name": name, "partitions": partitions})
    return brokers, topics


def _subscriptions(rng: random.Random, members: list[str], topics: list[str]) -> dict[str, list[str]]:
    mode = rng.random()
    if mode < 0.45:  # equal subscriptions (the constrained sticky path)
        shared = sorted(topics)
        subs = {m: list(shared) for m in members}
    else:
        subs = {m: sorted(rng.sample(topics, rng.randint(1, len(topics)))) for m in members}
    if rng.random() < 0.1:
        subs[rng.choice(members)] = []
    if rng.random() < 0.15:  # a topic missing from metadata
        for m in rng.sample(members, rng.randint(1, len(members))):
            subs[m] = sorted([*subs[m], "missing-topic"])
    if rng.random() < 0.03:  # duplicated entry (wire lists are not de-duplicated)
        m = rng.choice(members)
        if subs[m]:
            subs[m] = sorted([*subs[m], subs[m][0]])
    return subs


def _history(
    rng: random.Random, members: list[str], counts: dict[str, int], stale_claims: bool
) -> tuple[dict[str, list[tuple[str, int]]], dict[str, int | None]]:
    """A previous assignment: owned partitions per member and each member's generation."""
    owned: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
    generations: dict[str, int | None] = {}
    if rng.random() < 0.25:
        return owned, {m: None for m in members}
    base = rng.randint(1, 20)
    for m in members:
        roll = rng.random()
        generations[m] = base if roll < 0.7 else (None if roll < 0.8 else rng.randint(max(0, base - 3), base))
    previous = [m for m in members if rng.random() < 0.85]
    partitions = [(t, p) for t, c in counts.items() for p in range(c)]
    if rng.random() < 0.1:  # a claim on a topic that was deleted
        partitions.append(("gone", rng.randint(0, 3)))
    if stale_claims and counts:  # a claim beyond the topic's partition count (deleted and re-created smaller)
        topic = rng.choice(list(counts))
        partitions.append((topic, counts[topic] + rng.randint(0, 40)))
    if previous:
        for tp in partitions:
            if rng.random() < 0.8:
                owned[rng.choice(previous)].append(tp)
    _add_conflicts(rng, owned, previous, partitions, generations)
    return owned, generations


def _add_conflicts(
    rng: random.Random,
    owned: dict[str, list[tuple[str, int]]],
    previous: list[str],
    partitions: list[tuple[str, int]],
    generations: dict[str, int | None],
) -> None:
    """Double claims: a second member also claims a partition, same or other generation."""
    if len(previous) < 2 or not partitions or rng.random() < 0.6:
        return
    for tp in rng.sample(partitions, rng.randint(1, min(4, len(partitions)))):
        a, b = rng.sample(previous, 2)
        if tp not in owned[a]:
            owned[a].append(tp)
        if tp not in owned[b]:
            owned[b].append(tp)
        if rng.random() < 0.5:
            generations[b] = generations[a]


def encode_sticky_user_data(owned: list[tuple[str, int]], generation: int | None) -> bytes:
    """``StickyAssignor`` user data: V1 (with generation) or V0 (without), no version prefix."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in owned:
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(struct.pack(">i", len(by_topic)))
    for topic, partitions in by_topic.items():
        name = topic.encode("utf-8")
        out += struct.pack(">h", len(name)) + name
        out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    if generation is not None:
        out += struct.pack(">i", generation)
    return bytes(out)


def _member_json(
    rng: random.Random,
    assignor: str,
    member: str,
    topics: list[str],
    owned: list[tuple[str, int]],
    generation: int | None,
) -> dict[str, Any]:
    owned_sorted = sorted(owned)  # the wire sorts owned partitions by (topic, partition)
    entry: dict[str, Any] = {"id": member, "topics": topics, "user_data": None, "owned": [], "generation": None}
    if assignor == "sticky":
        # Eager sticky: ownership lives in user data; the protocol generation field also
        # matters for conflict resolution (spec Q2), so sometimes send it too.
        if owned or generation is not None:
            order = list(owned)
            rng.shuffle(order)
            data = encode_sticky_user_data(order, generation if rng.random() < 0.9 else None)
            entry["user_data"] = data.hex() if rng.random() < 0.97 else "00ff"
        entry["generation"] = generation if rng.random() < 0.5 else None
    elif assignor == "cooperative-sticky":
        entry["owned"] = [list(tp) for tp in owned_sorted]
        if generation is not None and rng.random() < 0.8:
            entry["generation"] = generation
            entry["user_data"] = struct.pack(">i", generation).hex()
        elif generation is not None:  # v0/v1 subscription: generation only in user data
            entry["user_data"] = struct.pack(">i", generation).hex()
        else:
            entry["user_data"] = rng.choice([None, "ffffffff", ""])
    else:
        entry["owned"] = [list(tp) for tp in owned_sorted]
        entry["generation"] = generation
    return entry


def assign_case(rng: random.Random, assignor: str, *, max_partitions: int = 500, stale_claims: bool = False) -> Case:
    """A random group for ``assignor``.

    ``stale_claims`` adds owned partitions whose id is beyond the topic's current partition
    count. Java keeps such claims in its sticky bookkeeping (and can then hand a partition to
    two members); they are kept out of the main mix so that their failures are told apart.
    """
    counts = _topics(rng, max_partitions)
    brokers, topic_json = _cluster(rng, counts)
    subscribable = list(counts)
    if rng.random() < 0.05:  # a topic with no partitions in metadata is skipped by Java
        topic_json.append({"name": "empty-topic", "partitions": []})
        subscribable.append("empty-topic")
    members = _member_ids(rng, _member_count(rng))
    subs = _subscriptions(rng, members, subscribable)
    owned, generations = _history(rng, members, counts, stale_claims)
    consumer_racks = _consumer_racks(rng, members, brokers)
    static = rng.random()
    member_json = []
    for index, m in enumerate(members):
        entry = _member_json(rng, assignor, m, subs[m], owned[m], generations.get(m))
        entry["rack"] = consumer_racks[m]
        if static < 0.3 or (static < 0.5 and rng.random() < 0.5):
            entry["instance_id"] = f"instance-{rng.randrange(10**6):06d}-{index}"
        else:
            entry["instance_id"] = None
        member_json.append(entry)
    return {"kind": "assign", "assignor": assignor, "brokers": brokers, "topics": topic_json, "members": member_json}


def _consumer_racks(rng: random.Random, members: list[str], brokers: list[dict[str, Any]]) -> dict[str, str | None]:
    broker_racks = sorted({b["rack"] for b in brokers if b["rack"] is not None})
    mode = rng.random()
    if mode < 0.35 or (not broker_racks and mode < 0.7):
        return {m: None for m in members}
    pool = broker_racks if broker_racks and rng.random() < 0.8 else ["zone-x", "zone-y"]
    every = mode < 0.8
    return {m: (rng.choice(pool) if every or rng.random() < 0.5 else None) for m in members}


def follow_up_case(rng: random.Random, case: Case, previous: dict[str, list[list[Any]]]) -> Case:
    """The next rebalance of ``case``'s group: survivors own what Java gave them (one
    generation later), some members left, some joined (realistic sticky input)."""
    assignor = case["assignor"]
    members = [m for m in case["members"] if m["id"] in previous]
    leaving = set(rng.sample([m["id"] for m in members], rng.randint(0, len(members) // 3)))
    generation = rng.randint(1, 50)
    follow: list[dict[str, Any]] = []
    for m in members:
        if m["id"] in leaving:
            continue
        owned = [(t, p) for t, p in previous[m["id"]]]
        entry = _member_json(rng, assignor, m["id"], m["topics"], owned, generation)
        entry.update(rack=m["rack"], instance_id=m["instance_id"])
        follow.append(entry)
    for i in range(rng.randint(0, 3)):
        template = rng.choice(case["members"])
        entry = _member_json(rng, assignor, f"joined-{i}-{rng.getrandbits(32):08x}", template["topics"], [], None)
        entry.update(rack=template["rack"], instance_id=None)
        follow.insert(rng.randint(0, len(follow)), entry)
    if not follow:
        follow = [m for m in case["members"][:1]]
    return {**case, "members": follow}
