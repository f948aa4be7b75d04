"""Run an oracle case through our Python implementations, in the oracle's result format."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import random
import zlib
from typing import Any

import pytest

from rebalance_lab.clients import partitioners, placement
from rebalance_lab.clients.java_random import JavaRandom, JavaRandomSource, MockRandom
from rebalance_lab.clients.placement import BrokerInfo, PlacementError, java_hashmap_put_order, java_string_hash
from tests.java_oracle import OracleError

Case = dict[str, Any]

# Python error class -> the Java exception Kafka throws for the same input.
_JAVA_ERROR = {
    placement.InvalidReplicationFactorError: "InvalidReplicationFactorException",
    placement.InvalidPartitionsError: "InvalidPartitionsException",
    placement.AdminOperationError: "AdminOperationException",
}


def run_producer_case(case: Case) -> Any:
    kind = case["kind"]
    if kind == "murmur2":
        return partitioners.murmur2(bytes.fromhex(case["key"]))
    if kind == "partition":
        return partitioners.partition_for_key(bytes.fromhex(case["key"]), case["num_partitions"])
    if kind == "roundrobin_partitioner":
        topic = partitioners.TopicPartitions(case["num_partitions"], tuple(case["available"]))
        rr = partitioners.RoundRobinPartitioner()
        return [rr.partition("t", topic) for _ in range(case["calls"])]
    if kind == "hashmap_order":
        return java_hashmap_put_order(case["keys"], java_string_hash)
    raise ValueError(kind)


def run_placement_case(case: Case) -> list[dict[str, Any]]:
    """All requests share one generator, as in the Java driver."""
    rng: JavaRandomSource
    if case["kind"] == "striped" and case.get("random") == "mock":
        rng = MockRandom(case["seed"])
    else:
        rng = JavaRandom(case["seed"])
    brokers = [BrokerInfo(b["id"], b.get("rack"), b.get("fenced", False)) for b in case["brokers"]]
    results: list[dict[str, Any]] = []
    for request in case["requests"]:
        extra: dict[str, int] = {}
        if case["kind"] == "adminutils":
            extra = {
                "fixed_start_index": request.get("fixed_start_index", -1),
                "start_partition_id": request.get("start_partition_id", -1),
            }
        try:
            replicas = placement.place_replicas(
                brokers, request["partitions"], request["rf"], algorithm=case["kind"], rng=rng, **extra
            )
        except PlacementError as exc:
            results.append({"error": {"type": _JAVA_ERROR[type(exc)], "message": str(exc)}})
        else:
            results.append({"replicas": replicas})
    return results


# --------------------------------------------------------------------------- assignors


def find_assignor_factory(name: str) -> Any:
    """A zero-argument factory of a *fresh* assignor instance named ``name``, or skip.

    Fresh per case because sticky assignors keep ``maxGeneration`` across calls (spec Q4);
    the Java driver also builds a new instance per case. Looks in the registry
    (``get_assignor`` / ``ASSIGNORS``) first, then in the package's modules, so a port is
    exercised as soon as its module lands.
    """
    package = importlib.import_module("rebalance_lab.clients.assignors")
    registry_obj = _from_registry(package, name)
    if registry_obj is not None:
        return registry_obj if inspect.isclass(registry_obj) else type(registry_obj)
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and getattr(cls, "name", None) == name and hasattr(cls, "assign"):
                return cls
    pytest.skip(f"no Python assignor named {name!r} yet in rebalance_lab.clients.assignors")


def _from_registry(package: Any, name: str) -> Any:
    registry = getattr(package, "ASSIGNORS", None)
    if registry is not None and name in registry:
        return registry[name]
    get = getattr(package, "get_assignor", None)
    if get is not None:
        try:
            return get(name)
        except (KeyError, ValueError, LookupError):
            return None
    return None


def build_inputs(case: Case) -> tuple[Any, Any]:
    """The case as ``ClusterView`` + ``GroupSubscription``.

    ``ClusterView`` promises "partitions in any order" (Java sorts them in
    ``AbstractPartitionAssignor.assign``), so the partitions of each topic are handed over in
    a shuffled order, fixed per case so that a failure replays identically.
    """
    types = importlib.import_module("rebalance_lab.clients.assignors.types")
    rack_of = {b["id"]: b.get("rack") for b in case["brokers"]}
    shuffler = random.Random(zlib.crc32(json.dumps(case, sort_keys=True).encode()))
    topics = {}
    for t in case["topics"]:
        metas = [
            types.PartitionMeta(p, tuple(rack_of[b] for b in replicas)) for p, replicas in enumerate(t["partitions"])
        ]
        shuffler.shuffle(metas)
        topics[t["name"]] = tuple(metas)
    cluster = types.ClusterView(topics)
    members = {}
    for m in case["members"]:
        members[m["id"]] = types.Subscription(
            topics=tuple(m["topics"]),
            user_data=None if m.get("user_data") is None else bytes.fromhex(m["user_data"]),
            owned_partitions=tuple(types.TopicPartition(t, p) for t, p in m.get("owned", [])),
            generation_id=m.get("generation"),
            rack_id=m.get("rack"),
            group_instance_id=m.get("instance_id"),
        )
    return cluster, types.GroupSubscription(members)


def run_assign_case(factory: Any, case: Case) -> dict[str, list[list[Any]]]:
    cluster, group = build_inputs(case)
    result = factory().assign(cluster, group)
    return {member: [[tp[0], tp[1]] for tp in a.partitions] for member, a in result.items()}


def outcomes_match(java: Any, python: Any) -> bool:
    """Equal results; a Java exception matches any Python exception (the port's choice of
    error type is its own, spec §10 item 7), but never a normal result."""
    if isinstance(java, OracleError):
        return isinstance(python, Exception)
    if isinstance(python, Exception):
        return False
    return bool(java == python)
