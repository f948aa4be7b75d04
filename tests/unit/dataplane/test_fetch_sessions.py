"""Incremental fetch sessions (KIP-227) as ``FetchManager`` / ``FetchSessionCache`` keep them."""

from __future__ import annotations

from rebalance_lab.coordinator.fetch_sessions import (
    FetchKey,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    PartitionOutcome,
    PartitionRequest,
    SessionErrorContext,
    SessionlessContext,
    next_epoch,
)
from rebalance_lab.protocol.errors import ErrorCode

A0: FetchKey = ("a", 0)
A1: FetchKey = ("a", 1)
B0: FetchKey = ("b", 0)


def _want(offset: int = 0) -> PartitionRequest:
    return PartitionRequest(offset, 1 << 20)


def _same(hw: int = 10, records: int = 0, error: int = ErrorCode.NONE) -> PartitionOutcome:
    return PartitionOutcome(error, hw, 0, records)


def _open(cache: FetchSessionCache, keys: list[FetchKey], now: int = 0, hw: int = 10) -> int:
    context = cache.new_context(12, 0, 0, [(k, _want()) for k in keys], [], now)
    assert isinstance(context, FullContext)
    session_id, carried = context.respond({k: _same(hw) for k in keys}, now)
    assert carried == keys
    return session_id


def test_a_full_fetch_with_epoch_zero_opens_a_session_whose_next_epoch_is_one() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0, A1])
    assert session_id > 0 and cache.sessions[session_id].epoch == 1


def test_epoch_minus_one_is_sessionless_and_answers_every_partition() -> None:
    context = FetchSessionCache().new_context(12, 0, -1, [(A0, _want()), (B0, _want())], [], 0)
    assert isinstance(context, SessionlessContext)
    assert context.respond({A0: _same(), B0: _same()}, 0) == (0, [A0, B0])


def test_an_incremental_fetch_answers_only_partitions_that_changed() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0, A1, B0])
    context = cache.new_context(12, session_id, 1, [], [], 5)
    assert isinstance(context, IncrementalContext)
    assert [k for k, _ in context.partitions()] == [A0, A1, B0]
    outcomes = {A0: _same(), A1: _same(hw=11), B0: _same(records=100)}
    assert context.respond(outcomes, 5) == (session_id, [A1, B0])
    assert cache.sessions[session_id].epoch == 2


def test_partitions_that_returned_records_move_to_the_back_of_the_session() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0, A1, B0])
    context = cache.new_context(12, session_id, 1, [], [], 5)
    context.respond({A0: _same(records=1), A1: _same(), B0: _same()}, 5)
    assert list(cache.sessions[session_id].partitions) == [A1, B0, A0]


def test_an_errored_partition_is_answered_and_answered_again_once_the_error_clears() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0])
    first = cache.new_context(12, session_id, 1, [], [], 1)
    assert first.respond({A0: _same(hw=-1, error=ErrorCode.NOT_LEADER_FOR_PARTITION)}, 1)[1] == [A0]
    second = cache.new_context(12, session_id, 2, [], [], 2)
    assert second.respond({A0: _same(hw=10)}, 2)[1] == [A0]


def test_an_incremental_fetch_updates_offsets_adds_and_forgets_partitions() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0, A1])
    context = cache.new_context(12, session_id, 1, [(A0, _want(7)), (B0, _want(3))], [A1], 1)
    assert context.partitions() == [(A0, _want(7)), (B0, _want(3))]


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0])
    context = cache.new_context(12, session_id, 1, [], [A0], 1)
    assert isinstance(context, SessionlessContext) and session_id not in cache.sessions


def test_an_unknown_session_is_fetch_session_id_not_found() -> None:
    context = FetchSessionCache().new_context(12, 1234, 1, [], [], 0)
    assert isinstance(context, SessionErrorContext) and context.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert context.respond({}, 0) == (0, [])


def test_a_wrong_epoch_is_invalid_fetch_session_epoch() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0])
    context = cache.new_context(12, session_id, 5, [], [], 0)
    assert context.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_switching_between_names_and_topic_ids_is_fetch_session_topic_id_error() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0])  # opened at v12, by name
    assert cache.new_context(13, session_id, 1, [], [], 0).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_full_fetch_naming_a_session_closes_it() -> None:
    cache = FetchSessionCache(seed=1)
    session_id = _open(cache, [A0])
    cache.new_context(12, session_id, -1, [(A0, _want())], [], 0)
    assert session_id not in cache.sessions


def test_a_full_cache_evicts_a_session_unused_for_longer_than_the_eviction_time() -> None:
    cache = FetchSessionCache(max_entries=1, eviction_ms=100, seed=1)
    old = _open(cache, [A0], now=0)
    new = _open(cache, [A0], now=101)
    assert new != 0 and list(cache.sessions) == [new] and old not in cache.sessions


def test_a_full_cache_refuses_a_session_when_nothing_is_evictable() -> None:
    cache = FetchSessionCache(max_entries=1, eviction_ms=100, seed=1)
    _open(cache, [A0], now=0)
    assert _open(cache, [A0, A1], now=50) == 0


def test_an_old_session_with_fewer_partitions_is_evicted_by_a_bigger_one() -> None:
    cache = FetchSessionCache(max_entries=1, eviction_ms=100, seed=1)
    small = _open(cache, [A0], now=0)
    cache.new_context(12, small, 1, [], [], 150)  # used after it became old: now evictable
    assert _open(cache, [A0, B0], now=200) != 0
    assert small not in cache.sessions


def test_an_old_session_is_not_evicted_by_one_of_the_same_size() -> None:
    cache = FetchSessionCache(max_entries=1, eviction_ms=100, seed=1)
    small = _open(cache, [A0], now=0)
    cache.new_context(12, small, 1, [], [], 150)
    assert _open(cache, [B0], now=200) == 0 and small in cache.sessions


def test_epochs_wrap_to_one_skipping_zero() -> None:
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1
