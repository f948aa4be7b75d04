"""The classic group APIs on a KIP-848 consumer group, over TCP, as Kafka 4.4.0 answers them.

Every test runs twice: against the emulator (flavor kafka-4, manual clock) and against a real
Kafka 4.4.0 broker (``kafka_broker_4``), so each expectation is the broker's own answer
(spec/kip848.md §8; where the spec and the broker differ, the broker's answer is written here).
The offsets retention sweep of consumer groups is emulator-only (the broker's retention is a
minute at least) and sits at the end.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import GroupConfig
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

from .consumer_target import (
    ASSIGNMENT_INTERVAL_MS,
    OTHER,
    TARGETS,
    TOPIC,
    TOPICS,
    Member,
    Target,
    commit,
    commit_topics,
    fetch,
    target_for,
)

E = ErrorCode
LIST, DESCRIBE, DELETE, OFFSET_DELETE = 16, 15, 42, 47


@pytest.fixture(params=TARGETS)
async def target(request: pytest.FixtureRequest) -> AsyncIterator[Target]:
    async with target_for(request) as found:
        yield found


@pytest.fixture
async def group(target: Target) -> AsyncIterator[tuple[str, Member]]:
    """A consumer group with one member "A" subscribed to TOPIC and owning all its partitions."""
    group_id = target.new_group_id()
    member = await Member.join(target, group_id, "A", [TOPIC])
    assert member.partitions() == {(TOPIC, p) for p in range(TOPICS[TOPIC])}
    yield group_id, member
    await member.leave()


async def _two_members_after_a_handover(target: Target, group_id: str, a: Member) -> Member:
    """B joins; A revokes what the new target takes from it and moves to the new epoch; B gets it."""
    b = await Member.join(target, group_id, "B", [TOPIC])
    await target.wait_ms(ASSIGNMENT_INTERVAL_MS + 200)  # the next target assignment may be computed now
    await b.heartbeat()
    old_epoch = a.epoch
    await a.heartbeat()  # A is told to revoke: still at its old epoch, partition pending revocation
    assert a.epoch == old_epoch and len(a.partitions()) < TOPICS[TOPIC]
    await a.acknowledge()
    assert a.epoch > old_epoch
    await b.heartbeat()
    assert b.partitions() and not b.partitions() & a.partitions()
    return b


def _revoked(a: Member) -> list[int]:
    return sorted(set(range(TOPICS[TOPIC])) - {p for _t, p in a.partitions()})


# -- OffsetCommit (spec §8.1; KIP-1251 per-partition assignment epochs are in 4.4.0) -------------

@pytest.mark.parametrize("version", [9, 10])
async def test_a_member_commits_with_its_current_epoch(target: Target, group: tuple[str, Member],
                                                       version: int) -> None:
    group_id, a = group
    result = await commit(a.conn, version, group_id, a.epoch, "A", {TOPIC: [0, 1]}, target.topic_ids)
    assert result == [(TOPIC, 0, E.NONE), (TOPIC, 1, E.NONE)]
    assert await fetch(a.conn, 9, group_id, "A", a.epoch, {TOPIC: [0, 1]}) == (0, [(TOPIC, 0, 7), (TOPIC, 1, 7)])


async def test_an_epoch_newer_than_the_members_is_a_stale_member_epoch(target: Target,
                                                                       group: tuple[str, Member]) -> None:
    group_id, a = group
    result = await commit(a.conn, 9, group_id, a.epoch + 1, "A", {TOPIC: [0]}, target.topic_ids)
    assert result == [(TOPIC, 0, E.STALE_MEMBER_EPOCH)]


@pytest.mark.parametrize("version", [8, 9])
async def test_an_unknown_member_is_unknown_member_id_before_the_version_rule(
    target: Target, group: tuple[str, Member], version: int
) -> None:
    group_id, a = group
    result = await commit(a.conn, version, group_id, a.epoch, "Z", {TOPIC: [0]}, target.topic_ids)
    assert result == [(TOPIC, 0, E.UNKNOWN_MEMBER_ID)]


@pytest.mark.parametrize("epoch_delta", [0, 3])
async def test_a_commit_below_v9_from_a_consumer_member_is_unsupported_version(
    target: Target, group: tuple[str, Member], epoch_delta: int
) -> None:
    group_id, a = group
    result = await commit(a.conn, 8, group_id, a.epoch + epoch_delta, "A", {TOPIC: [0]}, target.topic_ids)
    assert result == [(TOPIC, 0, E.UNSUPPORTED_VERSION)]


async def test_an_admin_commit_to_a_group_with_members_is_unknown_member_id(target: Target,
                                                                           group: tuple[str, Member]) -> None:
    group_id, a = group
    assert await commit(a.conn, 9, group_id, -1, "", {TOPIC: [0]}, target.topic_ids) == [
        (TOPIC, 0, E.UNKNOWN_MEMBER_ID)]


async def test_the_instance_id_of_a_commit_is_not_consulted(target: Target, group: tuple[str, Member]) -> None:
    group_id, a = group
    result = await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [0]}, target.topic_ids, instance_id="nobody")
    assert result == [(TOPIC, 0, E.NONE)]


async def test_an_empty_consumer_group_takes_admin_commits_only(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    conn = await target.connect()
    await a.leave()
    ids = target.topic_ids
    assert await commit(conn, 9, group_id, -1, "", {TOPIC: [0]}, ids) == [(TOPIC, 0, E.NONE)]
    assert await commit(conn, 9, group_id, -1, "A", {TOPIC: [1]}, ids) == [(TOPIC, 1, E.NONE)]
    assert await commit(conn, 9, group_id, 0, "", {TOPIC: [0]}, ids) == [(TOPIC, 0, E.UNKNOWN_MEMBER_ID)]
    assert await commit(conn, 8, group_id, 1, "A", {TOPIC: [0]}, ids) == [(TOPIC, 0, E.UNKNOWN_MEMBER_ID)]
    await conn.close()


async def test_a_revoking_member_commits_its_pending_partitions_with_its_epoch(target: Target,
                                                                              group: tuple[str, Member]) -> None:
    group_id, a = group
    await Member.join(target, group_id, "B", [TOPIC])
    await target.wait_ms(ASSIGNMENT_INTERVAL_MS + 200)
    await a.heartbeat()
    pending = _revoked(a)
    assert pending
    result = await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: pending}, target.topic_ids)
    assert result == [(TOPIC, p, E.NONE) for p in pending]


@pytest.mark.parametrize("version", [9, 10])
async def test_an_older_epoch_commits_partitions_assigned_at_or_before_it(target: Target, group: tuple[str, Member],
                                                                          version: int) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    kept = sorted(p for _t, p in a.partitions())
    result = await commit(a.conn, version, group_id, old_epoch, "A", {TOPIC: kept}, target.topic_ids)
    assert result == [(TOPIC, p, E.NONE) for p in kept]


@pytest.mark.parametrize("revoked_first", [False, True])
async def test_an_older_epoch_fails_the_whole_commit_when_one_partition_is_no_longer_the_members(
    target: Target, group: tuple[str, Member], revoked_first: bool
) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    kept, gone = min(p for _t, p in a.partitions()), _revoked(a)[0]
    order = [gone, kept] if revoked_first else [kept, gone]
    result = await commit(a.conn, 9, group_id, old_epoch, "A", {TOPIC: order}, target.topic_ids)
    assert result == [(TOPIC, p, E.STALE_MEMBER_EPOCH) for p in order]
    assert await commit(a.conn, 9, group_id, old_epoch, "A", {OTHER: [0]}, target.topic_ids) == [
        (OTHER, 0, E.STALE_MEMBER_EPOCH)]


@pytest.mark.parametrize("epoch_delta", [-1, None])
async def test_an_epoch_older_than_the_partitions_assignment_epoch_is_stale(
    target: Target, group: tuple[str, Member], epoch_delta: int | None
) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    kept = sorted(p for _t, p in a.partitions())
    epoch = -1 if epoch_delta is None else old_epoch + epoch_delta
    result = await commit(a.conn, 9, group_id, epoch, "A", {TOPIC: kept}, target.topic_ids)
    assert result == [(TOPIC, p, E.STALE_MEMBER_EPOCH) for p in kept]


async def test_a_partition_with_too_large_metadata_is_not_epoch_checked(target: Target,
                                                                        group: tuple[str, Member]) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    gone = _revoked(a)[0]
    result = await commit(a.conn, 9, group_id, old_epoch, "A", {TOPIC: [gone]}, target.topic_ids, metadata="x" * 5000)
    assert result == [(TOPIC, gone, E.OFFSET_METADATA_TOO_LARGE)]


async def test_a_partition_with_too_large_metadata_does_not_save_a_commit_that_fails_elsewhere(
    target: Target, group: tuple[str, Member]
) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    kept, gone = min(p for _t, p in a.partitions()), _revoked(a)[0]
    result = await commit(a.conn, 9, group_id, old_epoch, "A", {TOPIC: [kept, gone]}, target.topic_ids,
                          metadata={kept: "x" * 5000})
    assert result == [(TOPIC, kept, E.STALE_MEMBER_EPOCH), (TOPIC, gone, E.STALE_MEMBER_EPOCH)]


@pytest.mark.parametrize("version", [8, 9, 10])
@pytest.mark.parametrize("kind", ["simple", "consumer"])
async def test_a_commit_answers_pre_check_failures_first_merged_by_topic(target: Target, version: int,
                                                                        kind: str) -> None:
    """KafkaApis' response builder, for a simple (classic) group and a consumer group alike."""
    group_id = target.new_group_id()
    member = await Member.join(target, group_id, "A", [TOPIC]) if kind == "consumer" else None
    conn = member.conn if member else await target.connect()
    epoch, member_id = (member.epoch, "A") if member else (-1, "")
    ids = {**target.topic_ids, "nope": uuid.uuid4()}
    offsets = [(TOPIC, [0, 99, 1]), ("nope", [0]), (OTHER, [5, 0]), (TOPIC, [2])]
    result = await commit_topics(conn, version, group_id, epoch, member_id, offsets, ids)
    unknown_topic = E.UNKNOWN_TOPIC_ID if version >= 10 else E.UNKNOWN_TOPIC_OR_PARTITION
    ok = E.UNSUPPORTED_VERSION if member and version < 9 else E.NONE
    assert result == [(TOPIC, 99, E.UNKNOWN_TOPIC_OR_PARTITION), (TOPIC, 0, ok), (TOPIC, 1, ok), (TOPIC, 2, ok),
                      ("nope", 0, unknown_topic), (OTHER, 5, E.UNKNOWN_TOPIC_OR_PARTITION), (OTHER, 0, ok)]
    if member:
        await member.leave()
    else:
        await conn.close()


# -- OffsetFetch v9+ (spec §8.2: strict epoch equality, no KIP-1251 relaxation) -------------------

@pytest.mark.parametrize(("member_id", "epoch_delta", "expected"), [
    ("A", 0, E.NONE),
    (None, None, E.NONE),                    # admin: no member id, epoch -1
    ("A", 1, E.STALE_MEMBER_EPOCH),
    ("A", None, E.STALE_MEMBER_EPOCH),       # the member id with epoch -1 is checked
    ("Z", 0, E.UNKNOWN_MEMBER_ID),
    ("", None, E.UNKNOWN_MEMBER_ID),
    (None, 0, E.UNKNOWN_SERVER_ERROR),       # Kafka looks a null member id up: NullPointerException
])
async def test_a_fetch_with_member_id_and_epoch_is_checked_against_the_member(
    target: Target, group: tuple[str, Member], member_id: str | None, epoch_delta: int | None, expected: ErrorCode
) -> None:
    group_id, a = group
    await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [0]}, target.topic_ids)
    epoch = -1 if epoch_delta is None else a.epoch + epoch_delta
    error, rows = await fetch(a.conn, 9, group_id, member_id, epoch, {TOPIC: [0, 1]})
    assert error == expected
    assert rows == ([(TOPIC, 0, 7), (TOPIC, 1, -1)] if expected is E.NONE else [])


async def test_a_fetch_of_all_topics_with_a_stale_epoch_answers_the_group_error_only(
    target: Target, group: tuple[str, Member]
) -> None:
    group_id, a = group
    await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [0]}, target.topic_ids)
    assert await fetch(a.conn, 9, group_id, "A", a.epoch + 1, None) == (E.STALE_MEMBER_EPOCH, [])
    assert await fetch(a.conn, 8, group_id, None, -1, None) == (0, [(TOPIC, 0, 7)])


async def test_an_older_epoch_is_stale_for_a_fetch_even_where_a_commit_takes_it(target: Target,
                                                                                group: tuple[str, Member]) -> None:
    group_id, a = group
    old_epoch = a.epoch
    await _two_members_after_a_handover(target, group_id, a)
    assert (await fetch(a.conn, 9, group_id, "A", old_epoch, {TOPIC: [0]}))[0] == E.STALE_MEMBER_EPOCH


async def test_a_fetch_with_a_member_from_an_unknown_group_is_no_error(target: Target) -> None:
    conn = await target.connect()
    assert await fetch(conn, 9, target.new_group_id(), "A", 3, {TOPIC: [0]}) == (0, [(TOPIC, 0, -1)])
    await conn.close()


# -- OffsetDelete (spec §8.3: no state check, GROUP_SUBSCRIBED_TO_TOPIC per partition) -------------

async def _offset_delete(conn: Any, group_id: str,
                         topics: dict[str, list[int]]) -> tuple[int, list[tuple[str, int, int]]]:
    topic_cls = codec.request_type(OFFSET_DELETE).OffsetDeleteRequestTopic
    part_cls = topic_cls.OffsetDeleteRequestPartition
    response = await conn.request(OFFSET_DELETE, 0, group_id=group_id, topics=[
        topic_cls(name=n, partitions=[part_cls(partition_index=p) for p in ps]) for n, ps in topics.items()])
    return response.error_code, [(t.name, p.partition_index, p.error_code) for t in response.topics
                                 for p in t.partitions]


async def test_offset_delete_refuses_subscribed_topics_of_a_group_with_members(target: Target,
                                                                               group: tuple[str, Member]) -> None:
    group_id, a = group
    await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [0], OTHER: [0]}, target.topic_ids)
    result = await _offset_delete(a.conn, group_id, {TOPIC: [0, 1], OTHER: [0]})
    assert result == (0, [(TOPIC, 0, E.GROUP_SUBSCRIBED_TO_TOPIC), (TOPIC, 1, E.GROUP_SUBSCRIBED_TO_TOPIC),
                          (OTHER, 0, E.NONE)])
    assert await fetch(a.conn, 8, group_id, None, -1, None) == (0, [(TOPIC, 0, 7)])


async def test_offset_delete_on_an_empty_consumer_group_deletes(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [1]}, target.topic_ids)
    conn = await target.connect()
    await a.leave()
    assert await _offset_delete(conn, group_id, {TOPIC: [1]}) == (0, [(TOPIC, 1, E.NONE)])
    assert await fetch(conn, 8, group_id, None, -1, None) == (0, [])
    await conn.close()


# -- ListGroups (spec §8.3; the types filter is not trimmed, the states filter is) ----------------

async def _listed(conn: Any, version: int, group_ids: set[str], states: list[str] | None = None,
                  types: list[str] | None = None) -> set[tuple[Any, ...]]:
    fields: dict[str, Any] = {}
    if version >= 4:
        fields["states_filter"] = states or []
    if version >= 5:
        fields["types_filter"] = types or []
    response = await conn.request(LIST, version, **fields)
    assert response.error_code == 0
    keys = ("group_id", "protocol_type", "group_state", "group_type")[:2 + (version >= 4) + (version >= 5)]
    return {tuple(getattr(g, k) for k in keys) for g in response.groups if g.group_id in group_ids}


@pytest.mark.parametrize(("version", "expected"), [
    (0, ("consumer",)), (3, ("consumer",)), (4, ("consumer", "Stable")), (5, ("consumer", "Stable", "consumer")),
])
async def test_a_consumer_group_is_listed_with_protocol_type_consumer(target: Target, group: tuple[str, Member],
                                                                      version: int, expected: tuple[str, ...]) -> None:
    group_id, a = group
    assert await _listed(a.conn, version, {group_id}) == {(group_id, *expected)}


async def _classic_group(target: Target, conn: Any) -> str:
    """A "simple" classic group: an admin offset commit to a group id nobody uses creates one."""
    group_id = target.new_group_id()
    assert await commit(conn, 9, group_id, -1, "", {TOPIC: [0]}, target.topic_ids) == [(TOPIC, 0, E.NONE)]
    return group_id


@pytest.mark.parametrize(("types", "kinds"), [
    (["consumer"], {"consumer"}), (["CONSUMER"], {"consumer"}), (["classic"], {"classic"}),
    (["Classic", "consumer"], {"classic", "consumer"}), ([" consumer "], set()), (["share"], set()),
    (["bogus"], set()), ([], {"classic", "consumer"}),
])
async def test_the_types_filter_is_case_insensitive_and_not_trimmed(target: Target, group: tuple[str, Member],
                                                                    types: list[str], kinds: set[str]) -> None:
    group_id, a = group
    classic_id = await _classic_group(target, a.conn)
    rows = {
        "consumer": (group_id, "consumer", "Stable", "consumer"),
        "classic": (classic_id, "", "Empty", "classic"),
    }
    assert await _listed(a.conn, 5, {group_id, classic_id}, types=types) == {rows[k] for k in kinds}


@pytest.mark.parametrize(("states", "listed"), [
    (["stable"], True), (["STABLE"], True), ([" Stable "], True), (["reconciling", "assigning"], False),
    (["empty"], False), (["Dead"], False),
])
async def test_the_states_filter_is_case_insensitive_and_trimmed(target: Target, group: tuple[str, Member],
                                                                 states: list[str], listed: bool) -> None:
    group_id, a = group
    expected = {(group_id, "consumer", "Stable", "consumer")} if listed else set()
    assert await _listed(a.conn, 5, {group_id}, states=states) == expected


async def test_a_consumer_group_is_listed_assigning_then_reconciling_then_empty(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    b = await Member.join(target, group_id, "B", [TOPIC])
    assert await _listed(a.conn, 5, {group_id}) == {(group_id, "consumer", "Assigning", "consumer")}
    await target.wait_ms(ASSIGNMENT_INTERVAL_MS + 200)
    await b.heartbeat()
    assert await _listed(a.conn, 5, {group_id}, states=["reconciling"]) == {
        (group_id, "consumer", "Reconciling", "consumer")}
    conn = await target.connect()
    await b.leave()
    await a.leave()
    assert await _listed(conn, 5, {group_id}, states=["Empty"]) == {(group_id, "consumer", "Empty", "consumer")}
    await conn.close()


# -- DescribeGroups (KIP-1043: v6 says GROUP_ID_NOT_FOUND; v0-5 show a Dead placeholder) -----------

ALL_GROUP_OPERATIONS = {3, 6, 8, 10, 11}  # 3400 as kafka-python decodes the bit field; None is INT_MIN


def _describe_fields(version: int, group_ids: list[str]) -> dict[str, Any]:
    return {"groups": group_ids, **({"include_authorized_operations": True} if version >= 3 else {})}


def _described(version: int, g: Any) -> tuple[Any, ...]:
    return (g.error_code, g.error_message if version >= 6 else None, g.group_state, g.protocol_type,
            g.protocol_data, list(g.members), g.authorized_operations if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 3, 5, 6])
@pytest.mark.parametrize("empty", [False, True])
async def test_describe_groups_of_a_consumer_group(target: Target, version: int, empty: bool) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    conn = await target.connect()
    if empty:
        await a.leave()
    response = await conn.request(DESCRIBE, version, **_describe_fields(version, [group_id]))
    expected: tuple[Any, ...]
    if version >= 6:  # no authorized operations with the error, although they were asked for
        expected = (E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group.", "Dead", "", "", [], None)
    else:
        expected = (0, None, "Dead", "", "", [], ALL_GROUP_OPERATIONS if version >= 3 else None)
    assert [_described(version, g) for g in response.groups] == [expected]
    if not empty:
        await a.leave()
    await conn.close()


async def test_describe_groups_v6_of_an_unknown_group_is_dead_and_not_found(target: Target) -> None:
    conn = await target.connect()
    group_id = target.new_group_id()
    response = await conn.request(DESCRIBE, 6, **_describe_fields(6, [group_id]))
    assert [_described(6, g) for g in response.groups] == [
        (E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", "Dead", "", "", [], None)]
    await conn.close()


# -- DeleteGroups (spec §8.3: Empty only; the offsets go with the group) ---------------------------

async def test_a_consumer_group_with_members_is_not_deleted(target: Target, group: tuple[str, Member]) -> None:
    group_id, a = group
    response = await a.conn.request(DELETE, 2, groups_names=[group_id, group_id])
    assert [(r.group_id, r.error_code) for r in response.results] == [(group_id, E.NON_EMPTY_GROUP)]


async def test_an_empty_consumer_group_is_deleted_with_its_offsets(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    await commit(a.conn, 9, group_id, a.epoch, "A", {TOPIC: [0, 2]}, target.topic_ids)
    conn = await target.connect()
    await a.leave()
    response = await conn.request(DELETE, 2, groups_names=[group_id])
    assert [(r.group_id, r.error_code) for r in response.results] == [(group_id, E.NONE)]
    assert await fetch(conn, 8, group_id, None, -1, None) == (0, [])
    assert await _listed(conn, 5, {group_id}) == set()
    again = await conn.request(DELETE, 2, groups_names=[group_id])
    assert [(r.group_id, r.error_code) for r in again.results] == [(group_id, E.GROUP_ID_NOT_FOUND)]
    await conn.close()


# -- Offsets retention (spec/kip848.md §8.3; 4.4.0 ConsumerGroup.offsetExpirationCondition,
#    OffsetMetadataManager.cleanupExpiredOffsets, GroupCoordinatorShard.cleanupGroupMetadata) --------------------

RETENTION = GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_minutes=1,
                        offsets_retention_check_interval_ms=1_000)
BROKER_RETENTION = {"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1_000}


@pytest.fixture(params=TARGETS)
async def retention_target(request: pytest.FixtureRequest) -> AsyncIterator[Target]:
    """A target whose offsets expire a minute after their commit, swept every second (a minute of real
    time on the broker: Kafka's shortest retention)."""
    async with target_for(request, RETENTION, broker_settings=BROKER_RETENTION) as found:
        yield found


async def test_consumer_group_offsets_expire_by_commit_time_except_subscribed_ones_and_an_empty_group_goes(
    retention_target: Target,
) -> None:
    target = retention_target
    live, gone = target.new_group_id(), target.new_group_id()
    a = await Member.join(target, live, "A", [TOPIC])
    await commit(a.conn, 9, live, a.epoch, "A", {TOPIC: [0], OTHER: [1]}, target.topic_ids)
    b = await Member.join(target, gone, "B", [TOPIC])
    await commit(b.conn, 9, gone, b.epoch, "B", {TOPIC: [0]}, target.topic_ids)
    conn = await target.connect()
    await b.leave()
    for _ in range(2):  # 42 s, A heartbeating within its 45 s session: nothing expired yet
        await target.wait_ms(21_000)
        assert (await a.heartbeat()).error_code == 0
    error, rows = await fetch(conn, 8, live, None, -1, None)
    assert (error, sorted(rows)) == (0, [(TOPIC, 0, 7), (OTHER, 1, 7)])
    assert await _listed(conn, 5, {gone}) == {(gone, "consumer", "Empty", "consumer")}
    await target.wait_ms(21_000)  # 63 s: a minute since the commits, and a sweep since
    assert (await a.heartbeat()).error_code == 0
    assert await fetch(conn, 8, live, None, -1, None) == (0, [(TOPIC, 0, 7)])  # A subscribes to TOPIC
    assert await _listed(conn, 5, {gone}) == set()
    assert await fetch(conn, 8, gone, None, -1, None) == (0, [])
    await a.leave()
    await conn.close()
