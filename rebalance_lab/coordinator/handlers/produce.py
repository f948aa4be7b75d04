"""Produce (0), v3-13: append each partition's batch to its log.

Follows ``KafkaApis.handleProduceRequest`` and ``ReplicaManager.appendRecords``:

* a topic or partition the cluster does not have -> UNKNOWN_TOPIC_OR_PARTITION
  (v13 names topics by id: UNKNOWN_TOPIC_ID). Produce never auto-creates topics;
  only Metadata does (``AutoTopicCreationManager`` is called from Metadata and
  FindCoordinator only);
* not exactly one magic v2 batch -> INVALID_RECORD (``ProduceRequest.validateRecords``);
  acks other than -1, 0, 1 -> INVALID_REQUIRED_ACKS for every partition;
* a client may not write an internal topic -> INVALID_TOPIC_EXCEPTION;
* a broker that does not lead the partition -> NOT_LEADER_OR_FOLLOWER, with the
  KIP-951 leader hint in v10+;
* bad framing or CRC -> CORRUPT_MESSAGE; a batch over ``max.message.bytes`` ->
  MESSAGE_TOO_LARGE; a retried idempotent batch gets the first append's offset;
* every record is read before the append, as ``LogValidator`` reads it (``record_validation.py``):
  records that do not parse -> INVALID_RECORD (or UNKNOWN_SERVER_ERROR where Kafka 4.4.0 answers
  that), a record timestamp outside the topic's window -> INVALID_TIMESTAMP with record errors.

Partition error messages are null, as Kafka 4.4 sends them for these errors, except the few
``record_validation.AnsweredError`` carries.
Replication is instant, so acks=1 and acks=-1 answer at once. acks=0 has no
response (``handle`` returns None). Kafka closes the connection when an acks=0
request fails; the emulator drops the error silently (FIDELITY.md).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import record_batch, record_validation, topic_configs
from rebalance_lab.coordinator.cluster import PartitionInfo, TopicInfo
from rebalance_lab.coordinator.dataplane import dataplane, leadership_error, partition_log
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.leaders import current_leader, node_endpoints
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.coordinator.logs import PartitionLog
from rebalance_lab.coordinator.record_batch import BatchHeader
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 0
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.TopicProduceResponse
_PARTITION = _TOPIC.PartitionProduceResponse
_LEADER = _PARTITION.LeaderIdAndEpoch
_ENDPOINT = _RESPONSE.NodeEndpoint
_RECORD_ERROR = _PARTITION.BatchIndexAndErrorMessage
_APPEND_WEIGHT = 10  # an append (validation, the log, the answer) costs ~0.25 ms: 20 of them a step


@dataclass
class _Outcome:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    leader: PartitionInfo | None = None  # set for NOT_LEADER_OR_FOLLOWER (KIP-951)
    message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)


def _failed(exc: KafkaError) -> _Outcome:
    if not isinstance(exc, record_validation.AnsweredError):
        return _Outcome(exc.code)
    errors = exc.errors if isinstance(exc, record_validation.RecordErrors) else []
    return _Outcome(exc.code, message=str(exc), record_errors=errors)


def _timestamp_window(ctx: RequestContext, info: TopicInfo) -> tuple[int, int]:
    defaults = topic_configs.DEFAULTS[ctx.world.config.flavor]
    names = ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms")
    before, after = (int(info.configs.get(name, defaults[name])) for name in names)
    return before, after


def _validated(ctx: RequestContext, info: TopicInfo, records: bytes, log_append_time: bool) -> bytes:
    """The batch's exact bytes once Kafka's checks before the log pass; raises KafkaError."""
    header, raw = record_validation.produce_batch(records, topic_configs.max_message_bytes(info.configs))
    parsed = record_validation.validate_records(header, raw)
    # A manual clock is a test's time, not the producers' (it starts at 0): the window needs the broker's wall clock.
    if parsed is not None and not log_append_time and not ctx.world.clock.manual:
        record_validation.check_timestamps(header, parsed, ctx.world.now_ms(), *_timestamp_window(ctx, info))
    return raw


def _verify_transaction(ctx: RequestContext, log: PartitionLog, header: BatchHeader,
                        partition: tuple[str, int]) -> None:
    """KIP-890 part 1 (``ReplicaManager.appendRecords`` with transaction verification, on by default): a
    transactional batch that opens a transaction in the partition must come from a transaction that
    added the partition; a duplicate of a stored batch is answered before, as Kafka does."""
    if not header.is_transactional or log.producer_state.duplicate_of(header) is not None:
        return
    # Produce v12+ is transaction version 2 (the broker adds the partition itself) where it is finalized; it asks
    # the coordinator every time (an end under way answers CONCURRENT_TRANSACTIONS), version 1 only for a batch
    # opening a transaction in the partition
    tv2 = ctx.api_version >= 12 and ctx.world.config.flavor == Flavor.KAFKA_4
    if not tv2 and log.producer_state.open_transaction(header.producer_id) is not None:
        return
    error = transactions_of(ctx.world).coordinator.producing_error(header.producer_id, header.producer_epoch,
                                                                   partition, ctx.world.now_ms(), tv2)
    if error is ErrorCode.INVALID_TXN_STATE:
        raise record_validation.AnsweredError(error, "Partition was not added to the transaction")
    if error is not ErrorCode.NONE:
        raise KafkaError(error)


def _resolve(ctx: RequestContext, topic: Any) -> tuple[TopicInfo | None, ErrorCode]:
    # KafkaApis: WRITE on each topic, checked before the topic's existence (the real 4.4.0 broker answers
    # TOPIC_AUTHORIZATION_FAILED for a missing topic the caller may not write)
    if ctx.api_version >= 13:
        info = ctx.world.cluster.topic_by_id(topic.topic_id)
        if info is not None and not authz.permits(ctx, authz.WRITE, authz.TOPIC, info.name):
            return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return info, ErrorCode.UNKNOWN_TOPIC_ID
    if not authz.permits(ctx, authz.WRITE, authz.TOPIC, topic.name or ""):
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return ctx.world.cluster.topics.get(topic.name), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _append(ctx: RequestContext, info: TopicInfo, partition: PartitionInfo, records: bytes | None) -> _Outcome:
    if records is None or not records:
        return _Outcome(ErrorCode.INVALID_RECORD)  # ProduceRequest.validateRecords: no batch
    if info.internal:
        return _Outcome(ErrorCode.INVALID_TOPIC)  # ReplicaManager: clients may not write internal topics
    error = leadership_error(ctx.broker.node_id, partition)
    if error != ErrorCode.NONE:
        return _Outcome(error, leader=partition)
    log = partition_log(ctx.world, info, partition)
    log_append_time = topic_configs.uses_log_append_time(info.configs)
    try:
        batch = _validated(ctx, info, records, log_append_time)
        _verify_transaction(ctx, log, record_batch.parse_header(batch), (info.name, partition.partition))
        result = log.append(batch, ctx.world.now_ms(), log_append_time, topic_configs.max_message_bytes(info.configs))
    except KafkaError as exc:
        return _failed(exc)
    dataplane(ctx.world).logs.appended((info.topic_id, partition.partition))
    return _Outcome(ErrorCode.NONE, result.base_offset, result.log_append_time, result.log_start_offset)


def _partition_outcome(ctx: RequestContext, info: TopicInfo | None, missing: ErrorCode, data: Any,
                       acks: int) -> _Outcome:
    if info is None or not 0 <= data.index < len(info.partitions):
        return _Outcome(missing if info is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if acks not in (-1, 0, 1):
        return _Outcome(ErrorCode.INVALID_REQUIRED_ACKS)
    return _append(ctx, info, info.partitions[data.index], data.records)


def _partition_response(ctx: RequestContext, index: int, outcome: _Outcome) -> Any:
    leader = None
    if outcome.leader is not None and ctx.api_version >= 10:
        leader = current_leader(_LEADER, outcome.leader)
    return _PARTITION(
        index=index, error_code=outcome.error, base_offset=outcome.base_offset,
        log_append_time_ms=outcome.log_append_time, log_start_offset=outcome.log_start_offset,
        record_errors=[_RECORD_ERROR(batch_index=i, batch_index_error_message=m) for i, m in outcome.record_errors],
        error_message=outcome.message, current_leader=leader,
    )


def _has_transactional_records(request: Any, pacer: Pacer) -> Generator[None, None, bool]:
    """``ProduceRequest.hasTransactionalRecords``: a partition's first batch carries the transactional bit."""
    for topic in request.topic_data:
        for data in topic.partition_data:
            yield from pacer.pause()
            try:
                if data.records and record_batch.parse_header(data.records).is_transactional:
                    return True
            except KafkaError:
                continue  # a batch too short to read: the per-partition checks answer it
    return False


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_produce(ctx, request), sum(len(t.partition_data) for t in request.topic_data))


def _produce(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """Partition by partition, in steps (ReplicaManager.appendRecords appends each partition on its own, with
    no atomicity across them): a Produce to 200,000 partitions held the loop ~52 s."""
    pacer = Pacer()
    # KafkaApis: transactional records need WRITE on the request's transactional id, or the whole request fails
    if (yield from _has_transactional_records(request, pacer)) and (
            request.transactional_id is None
            or not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id)):
        return None if request.acks == 0 else error_response(
            ctx.api_version, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    topics, leaders = [], set()
    for topic in request.topic_data:
        info, missing = _resolve(ctx, topic)
        partitions = []
        for data in topic.partition_data:
            yield from pacer.pause(_APPEND_WEIGHT)
            outcome = _partition_outcome(ctx, info, missing, data, request.acks)
            if outcome.leader is not None and outcome.leader.leader_id >= 0:
                leaders.add(outcome.leader.leader_id)
            partitions.append(_partition_response(ctx, data.index, outcome))
        topics.append(_TOPIC(name=getattr(topic, "name", None), topic_id=getattr(topic, "topic_id", None),
                             partition_responses=partitions))
    if request.acks == 0:
        return None
    endpoints = node_endpoints(_ENDPOINT, ctx.world, leaders, ctx.listener) if ctx.api_version >= 10 else []
    return codec.new_response(API_KEY, ctx.api_version, responses=topics, throttle_time_ms=0,
                              node_endpoints=endpoints)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    """``ProduceRequest.getErrorResponse``: every partition with the error."""
    topics = [
        _TOPIC(name=getattr(t, "name", None), topic_id=getattr(t, "topic_id", None),
               partition_responses=[_PARTITION(index=p.index, error_code=code, base_offset=-1)
                                    for p in t.partition_data])
        for t in request.topic_data
    ]
    return codec.new_response(API_KEY, api_version, responses=topics, throttle_time_ms=0)
