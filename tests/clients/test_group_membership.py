"""Real clients form consumer groups, lose members and take over their partitions.

Every test runs once per client library (aiokafka, kafka-python, confluent-kafka) and per
target (the emulator as kafka-4 and as kafka-3; real brokers later, see conftest.py). Each
member is its own process (tests/clients/member.py); the group is observed through the
Kafka protocol only (DescribeGroups, Heartbeat probes for the generation, OffsetFetch).
"""

from __future__ import annotations

import time
import uuid

import pytest

from tests.clients.harness import (
    GROUP_TIMEOUT,
    HEARTBEAT_INTERVAL_MS,
    Member,
    Members,
    assert_disjoint_cover,
    wait_for_settled_group,
)
from tests.clients.target import Target, wait_until

pytestmark = pytest.mark.clients

PARTITIONS = 6


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def _start(members: Members, client: str, group: str, topic: str, count: int, **options: object) -> list[Member]:
    return [members.start(client, group, topic, f"{client}-{i}", **options) for i in range(count)]


def test_a_three_member_group_gets_disjoint_assignments_covering_every_partition(
    target: Target, members: Members, client: str
) -> None:
    topic = target.observer.create_topic(PARTITIONS)
    group = _group()
    group_members = _start(members, client, group, topic, 3)

    description = wait_for_settled_group(target, group, topic, PARTITIONS, group_members)

    assert_disjoint_cover(description.assignments(), PARTITIONS)
    assert all(m.partitions for m in description.members), f"a member got nothing: {description}"
    assert description.protocol == "range"


def test_a_member_leaving_triggers_a_rebalance_and_the_rest_cover_everything(
    target: Target, members: Members, client: str
) -> None:
    session_timeout_ms = 20_000  # far longer than the test waits: only a LeaveGroup can explain the rebalance
    topic = target.observer.create_topic(PARTITIONS)
    group = _group()
    group_members = _start(members, client, group, topic, 3, session_timeout_ms=session_timeout_ms)
    before = wait_for_settled_group(target, group, topic, PARTITIONS, group_members)
    survivor = before.by_client()[group_members[0].name].member_id
    generation_before = target.observer.generation(group, survivor)

    leaving = group_members.pop()
    left_at = time.monotonic()
    leaving.close()
    after = wait_for_settled_group(target, group, topic, PARTITIONS, group_members,
                                   timeout=session_timeout_ms / 1000 * 0.75)

    assert time.monotonic() - left_at < session_timeout_ms / 1000, "the rebalance waited for the session timeout"
    assert set(after.by_client()) == {m.name for m in group_members}
    assert target.observer.generation(group, survivor) > generation_before
    assert_disjoint_cover(after.assignments(), PARTITIONS)


def test_a_member_killed_without_leaving_is_expired_and_the_rest_take_over(
    target: Target, members: Members, client: str
) -> None:
    session_timeout_ms = 4000
    topic = target.observer.create_topic(PARTITIONS)
    group = _group()
    group_members = _start(members, client, group, topic, 3, session_timeout_ms=session_timeout_ms)
    wait_for_settled_group(target, group, topic, PARTITIONS, group_members)

    crashed = group_members.pop()
    crashed.kill()  # SIGKILL: no LeaveGroup, no more heartbeats
    killed_at = time.monotonic()
    still_there = target.observer.describe(group, topic)
    after = wait_for_settled_group(target, group, topic, PARTITIONS, group_members,
                                   timeout=session_timeout_ms / 1000 + GROUP_TIMEOUT)
    took = time.monotonic() - killed_at

    assert crashed.name in still_there.by_client(), "a killed member must stay until its session times out"
    # Its last heartbeat was at most one heartbeat interval before the kill.
    assert took >= (session_timeout_ms - HEARTBEAT_INTERVAL_MS) / 1000 - 0.2, f"expired after {took:.2f}s"
    assert set(after.by_client()) == {m.name for m in group_members}
    assert_disjoint_cover(after.assignments(), PARTITIONS)


def test_a_static_member_restarting_within_its_session_timeout_causes_no_rebalance(
    target: Target, members: Members, client: str
) -> None:
    """aiokafka 0.14, kafka-python 3.0.12 and librdkafka all support group.instance.id (KIP-345).

    The member is crashed (SIGKILL) and started again with the same instance id: the
    coordinator replaces the static member in place (coordinator.md §5.4) without a new
    generation, and nobody else is asked to rejoin.
    """
    session_timeout_ms = 15_000
    topic = target.observer.create_topic(PARTITIONS)
    group = _group()
    group_members = [
        members.start(client, group, topic, f"{client}-{i}", instance_id=f"instance-{i}",
                      session_timeout_ms=session_timeout_ms)
        for i in range(3)
    ]
    before = wait_for_settled_group(target, group, topic, PARTITIONS, group_members)
    observer_member = before.by_client()[group_members[0].name].member_id
    generation_before = target.observer.generation(group, observer_member)
    callbacks_before = {m.name: len(m.rebalance_callbacks()) for m in group_members[:2]}

    restarting = group_members.pop()
    old_id = before.by_client()[restarting.name].member_id
    restarting.kill()
    restarted_at = time.monotonic()
    group_members.append(members.start(client, group, topic, restarting.name, instance_id="instance-2",
                                       session_timeout_ms=session_timeout_ms))
    after = wait_for_settled_group(target, group, topic, PARTITIONS, group_members)
    replaced = after.by_client()[restarting.name]
    assert time.monotonic() - restarted_at < session_timeout_ms / 1000, "the restart took longer than the session"

    assert replaced.member_id != old_id and replaced.instance_id == "instance-2"
    assert target.observer.generation(group, observer_member) == generation_before, "a rebalance happened"
    assert after.assignments() == before.assignments()
    assert {m.name: len(m.rebalance_callbacks()) for m in group_members[:2]} == callbacks_before, \
        "the members that stayed were asked to rebalance"
    snapshots = target.generation_snapshots(group)
    if snapshots is not None:  # emulator extra: no generation was completed after the first settled one
        assert max(s["generation"] for s in snapshots) == generation_before


def test_committed_offsets_are_honoured_across_rebalances_and_no_record_is_skipped(
    target: Target, members: Members, client: str
) -> None:
    """Members commit synchronously after each small batch; one joins, then one leaves mid-stream.

    Half the records are consumed and committed by two members; a third joins (the partitions
    it takes over must resume at their commits); the other half is produced and, while it is
    being consumed, one of the first two leaves. Every record must be consumed at least once,
    and a record consumed twice must lie at or after its partition's last commit before the
    second consumption (only uncommitted work may be repeated).
    """
    half = 300
    topic = target.observer.create_topic(PARTITIONS)
    first_ends = target.observer.produce(topic, PARTITIONS, half)
    group = _group()
    options = {"commit": True, "max_poll_records": 5, "delay_ms": 20}
    first = _start(members, client, group, topic, 2, **options)
    everyone = list(first)

    def unique_consumed() -> int:
        return len({(p, o) for m in everyone for _t, p, o in m.consumed()})

    wait_until(lambda: target.observer.committed(group, topic) == first_ends, GROUP_TIMEOUT,
               "the first half consumed and committed")
    everyone.append(members.start(client, group, topic, f"{client}-2", **options))  # rebalance: one joins
    wait_for_settled_group(target, group, topic, PARTITIONS, everyone)
    ends = {p: end * 2 for p, end in first_ends.items()}
    assert target.observer.produce(topic, PARTITIONS, half) == first_ends
    wait_until(lambda: unique_consumed() >= half * 4 // 3, GROUP_TIMEOUT, "some of the second half")
    first[0].close()  # rebalance: one leaves
    wait_until(lambda: unique_consumed() >= half * 2, GROUP_TIMEOUT, "every record")

    _assert_nothing_skipped_and_only_uncommitted_work_repeated(everyone, ends)
    wait_until(lambda: target.observer.committed(group, topic) == ends, GROUP_TIMEOUT, "the final commits")


def _assert_nothing_skipped_and_only_uncommitted_work_repeated(everyone: list[Member], ends: dict[int, int]) -> None:
    consumptions = sorted((t, p, o, m.name) for m in everyone for t, p, o in m.consumed())
    commits = sorted((e["t"], p, o) for m in everyone for e in m.snapshot() if e["ev"] == "committed"
                     for p, o in e["offsets"])
    seen: set[tuple[int, int]] = set()
    handovers_from_a_commit = 0
    first_by: dict[tuple[str, int], int] = {}
    for t, p, o, name in consumptions:
        if (p, o) in seen:
            last_commit = max((c for ct, cp, c in commits if cp == p and ct < t), default=0)
            assert o >= last_commit, f"{name} re-read partition {p} offset {o} below the commit {last_commit}"
        seen.add((p, o))
        if (name, p) not in first_by:
            first_by[name, p] = o
            handovers_from_a_commit += o > 0
    missing = {(p, o) for p, end in ends.items() for o in range(end)} - seen
    assert not missing, f"skipped records: {sorted(missing)[:20]} ({len(missing)} in all)"
    assert handovers_from_a_commit, "no member ever resumed a partition from a committed offset"
