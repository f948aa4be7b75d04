"""Incremental fetch sessions (KIP-227), as Kafka's ``FetchManager`` and ``FetchSessionCache``.

Sans-I/O: every call takes ``now``. A Fetch request becomes a *context*
(:meth:`FetchSessionCache.new_context`), which says which partitions to read and,
given what was read, which partitions the response carries and under which session
id. The rules are Kafka's (``FetchManager.newContext``, ``FetchSession.update``,
``CachedPartition.maybeUpdateResponseData``, ``FetchSessionCacheShard.tryEvict``):

* session id 0 with epoch -1: sessionless full fetch; epoch 0: full fetch that
  opens a session (the response carries the new id, the next epoch is 1);
* a full fetch naming an existing session closes it first; epoch -1 never opens one;
* an incremental fetch (epoch > 0) updates the cached partitions, drops forgotten
  ones and answers only partitions with records, a changed high watermark or log
  start offset, or an error. Partitions that returned records move to the end of
  the session (fairness);
* unknown session -> FETCH_SESSION_ID_NOT_FOUND, wrong epoch ->
  INVALID_FETCH_SESSION_EPOCH, topic ids on one side only -> FETCH_SESSION_TOPIC_ID_ERROR;
* the cache holds ``max.incremental.fetch.session.cache.slots`` (1000) sessions; a
  new one may evict a session unused for 120 s, else one created over 120 s ago
  that caches fewer partitions.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field

from rebalance_lab.protocol.errors import ErrorCode

INVALID_SESSION_ID = 0  # FetchMetadata
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
DEFAULT_MAX_SESSIONS = 1000  # max.incremental.fetch.session.cache.slots
EVICTION_MS = 120_000  # KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
_MAX_INT = (1 << 31) - 1
STEP = 200  # partitions per step of respond_steps

# A topic name (Fetch v4-12) or a topic id (v13+), and a partition index.
FetchKey = tuple[str | uuid.UUID, int]


@dataclass(frozen=True)
class PartitionRequest:
    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    current_leader_epoch: int = -1


@dataclass(frozen=True)
class PartitionOutcome:
    """What reading one partition produced, as far as the session cares."""

    error: int
    high_watermark: int
    log_start_offset: int
    records_size: int


@dataclass
class CachedPartition:
    request: PartitionRequest
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, outcome: PartitionOutcome) -> bool:
        """``CachedPartition.maybeUpdateResponseData``, updating the cached values."""
        respond = outcome.records_size > 0
        if self.high_watermark != outcome.high_watermark:
            respond = True
            self.high_watermark = outcome.high_watermark
        if self.log_start_offset != outcome.log_start_offset:
            respond = True
            self.log_start_offset = outcome.log_start_offset
        if outcome.error != ErrorCode.NONE:
            self.high_watermark = -1  # so the partition is re-sent once the error clears
            respond = True
        return respond


def next_epoch(epoch: int) -> int:
    """``FetchMetadata.nextEpoch``: increments, skipping 0 on wrap-around."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_INT else epoch + 1


@dataclass
class FetchSession:
    session_id: int
    partitions: dict[FetchKey, CachedPartition]
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int = 1
    privileged: bool = False
    cached_size: int = 0
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def update(self, fetch_data: Iterable[tuple[FetchKey, PartitionRequest]], forgotten: Iterable[FetchKey]) -> None:
        for key, request in fetch_data:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(request)
            else:
                cached.request = request
        for key in forgotten:
            self.partitions.pop(key, None)

    def evictable_key(self) -> tuple[bool, int, int]:
        # FetchSession.EvictableKey ordering: privileged, then size, then id.
        return (self.privileged, self.cached_size, self.session_id)


# -- contexts ------------------------------------------------------------------------


@dataclass
class FetchContext:
    """What a Fetch reads and how its response is shaped; see the subclasses."""

    fetch_data: list[tuple[FetchKey, PartitionRequest]] = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE

    def partitions(self) -> list[tuple[FetchKey, PartitionRequest]]:
        return list(self.fetch_data)

    def respond(self, outcomes: dict[FetchKey, PartitionOutcome], now_ms: int) -> tuple[int, list[FetchKey]]:
        """(session id for the response, keys it carries in order). Call once per request."""
        steps = self.respond_steps(outcomes, now_ms)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                answer: tuple[int, list[FetchKey]] = done.value
                return answer

    def respond_steps(self, outcomes: dict[FetchKey, PartitionOutcome],
                      now_ms: int) -> Generator[None, None, tuple[int, list[FetchKey]]]:
        """:meth:`respond` in steps of :data:`STEP` partitions (a session of 200,000 partitions is updated in
        ~0.2 s; the shell lets other requests in between two steps). The session is the request's own: its
        epoch moved on in ``new_context``, so no other request can use it meanwhile."""
        return INVALID_SESSION_ID, (yield from _keys(self.fetch_data))


@dataclass
class SessionErrorContext(FetchContext):
    def partitions(self) -> list[tuple[FetchKey, PartitionRequest]]:
        return []

    def respond_steps(self, outcomes: dict[FetchKey, PartitionOutcome],
                      now_ms: int) -> Generator[None, None, tuple[int, list[FetchKey]]]:
        return INVALID_SESSION_ID, []
        yield  # a generator


@dataclass
class SessionlessContext(FetchContext):
    pass


@dataclass
class FullContext(FetchContext):
    cache: FetchSessionCache | None = None
    uses_topic_ids: bool = False

    def respond_steps(self, outcomes: dict[FetchKey, PartitionOutcome],
                      now_ms: int) -> Generator[None, None, tuple[int, list[FetchKey]]]:
        assert self.cache is not None
        cached: dict[FetchKey, CachedPartition] = {}
        for done, (key, request) in enumerate(self.fetch_data, 1):
            if done % STEP == 0:
                yield
            outcome = outcomes.get(key)
            hw, lso = (outcome.high_watermark, outcome.log_start_offset) if outcome else (-1, -1)
            cached[key] = CachedPartition(request, hw, lso)
        session_id = self.cache.maybe_create(now_ms, cached, self.uses_topic_ids)
        return session_id, (yield from _keys(self.fetch_data))


@dataclass
class IncrementalContext(FetchContext):
    session: FetchSession | None = None

    def partitions(self) -> list[tuple[FetchKey, PartitionRequest]]:
        assert self.session is not None
        return [(key, cached.request) for key, cached in self.session.partitions.items()]

    def respond_steps(self, outcomes: dict[FetchKey, PartitionOutcome],
                      now_ms: int) -> Generator[None, None, tuple[int, list[FetchKey]]]:
        session = self.session
        assert session is not None
        carried: list[FetchKey] = []
        for done, key in enumerate(list(session.partitions), 1):
            if done % STEP == 0:
                yield
            cached = session.partitions[key]
            outcome = outcomes.get(key)
            if outcome is None or not cached.must_respond(outcome):
                continue
            carried.append(key)
            if outcome.records_size > 0:  # round-robin: served partitions go to the back
                session.partitions[key] = session.partitions.pop(key)
        return session.session_id, carried


def _keys(fetch_data: list[tuple[FetchKey, PartitionRequest]]) -> Generator[None, None, list[FetchKey]]:
    keys = []
    for done, (key, _) in enumerate(fetch_data, 1):
        if done % (STEP * 10) == 0:
            yield
        keys.append(key)
    return keys


# -- the cache -----------------------------------------------------------------------


class FetchSessionCache:
    def __init__(self, max_entries: int = DEFAULT_MAX_SESSIONS, eviction_ms: int = EVICTION_MS,
                 seed: int | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self._random = random.Random(seed)

    def new_context(
        self,
        version: int,
        session_id: int,
        epoch: int,
        fetch_data: list[tuple[FetchKey, PartitionRequest]],
        forgotten: list[FetchKey],
        now_ms: int,
    ) -> FetchContext:
        """``FetchManager.newContext`` for a consumer (never privileged)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)  # a full request closes the session it names
            if epoch == FINAL_EPOCH:
                return SessionlessContext(fetch_data)
            return FullContext(fetch_data, cache=self, uses_topic_ids=version >= 13)
        return self._incremental(version, session_id, epoch, fetch_data, forgotten, now_ms)

    def _incremental(self, version: int, session_id: int, epoch: int,
                     fetch_data: list[tuple[FetchKey, PartitionRequest]], forgotten: list[FetchKey],
                     now_ms: int) -> FetchContext:
        session = self.sessions.get(session_id)
        if session is None:
            return SessionErrorContext(error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionErrorContext(error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, forgotten)
        if not session.partitions:
            self.sessions.pop(session_id, None)
            return SessionlessContext(fetch_data)
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(fetch_data, session=session)

    def maybe_create(self, now_ms: int, partitions: dict[FetchKey, CachedPartition], uses_topic_ids: bool) -> int:
        """A new session's id, or 0 when the cache is full and nothing may be evicted."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(len(partitions), now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_id(), partitions, uses_topic_ids, now_ms, now_ms)
        self.sessions[session.session_id] = session
        self.touch(session, now_ms)
        return session.session_id

    def touch(self, session: FetchSession, now_ms: int) -> None:
        # FetchSessionCacheShard.touch: evictability is decided when a session is used.
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old

    def _try_evict(self, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.session_id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            del self.sessions[stalest.session_id]
            return True
        candidates = [s for s in self.sessions.values() if s.evictable_by_all]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.evictable_key)
        if (False, size, 0) < weakest.evictable_key():
            return False
        del self.sessions[weakest.session_id]
        return True

    def _new_id(self) -> int:
        while True:
            candidate = self._random.randint(1, _MAX_INT - 1)
            if candidate not in self.sessions:
                return candidate
