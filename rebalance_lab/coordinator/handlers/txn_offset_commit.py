"""TxnOffsetCommit (28), v0-5: offsets committed inside a transaction (KIP-98, KIP-447).

``KafkaApis.handleTxnOffsetCommitRequest``: WRITE on the transactional id, READ on the group (either
failing answers every partition), READ on each topic and its existence per partition; then the group
coordinator (``OffsetMetadataManager.commitTransactionalOffset``): NOT_COORDINATOR, the transaction
must hold the group's offsets partition (AddOffsetsToTxn), the KIP-447 member checks (v3+: generation,
member id, instance id; a consumer group's stale epoch is ILLEGAL_GENERATION), then each offset is
kept pending until the transaction ends (visible at COMMIT, dropped at ABORT).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz, txn_common
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.coordinator.offsets import CommittedOffset
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.coordinator.routing import partition_for
from rebalance_lab.coordinator.transactions.service import OFFSETS_TOPIC
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 28
_MEMBER_FROM = 3  # GenerationId, MemberId, GroupInstanceId (KIP-447)
_TV2_FROM = 5
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.TxnOffsetCommitResponseTopic
_PARTITION = _TOPIC.TxnOffsetCommitResponsePartition

Errors = dict[tuple[str, int], ErrorCode]


def _prechecked(ctx: RequestContext, request: Any) -> Generator[None, None, tuple[Errors, list[tuple[str, int]]]]:
    """KafkaApis' checks, in steps: the failed partitions' errors, and the partitions that passed."""
    errors: Errors = {}
    passed: list[tuple[str, int]] = []
    pacer = Pacer()
    for topic in request.topics:
        info = ctx.world.cluster.topics.get(topic.name)
        readable = authz.permits(ctx, authz.READ, authz.TOPIC, topic.name)
        for p in topic.partitions:
            yield from pacer.pause()
            if not readable:
                errors[(topic.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or not 0 <= p.partition_index < len(info.partitions):
                errors[(topic.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                passed.append((topic.name, p.partition_index))
    return errors, passed


def _member(ctx: RequestContext, request: Any) -> tuple[str, int, str | None]:
    if ctx.api_version < _MEMBER_FROM:
        return "", -1, None
    return request.member_id, request.generation_id, request.group_instance_id


def _transaction_error(ctx: RequestContext, request: Any) -> ErrorCode:
    """KIP-890 verification: the transaction must have added the group's offsets partition; from v5, where
    transaction version 2 is finalized, the coordinator adds it itself."""
    partition = (OFFSETS_TOPIC, partition_for(request.group_id, ctx.world.config.group.offsets_topic_num_partitions))
    service = txn_common.service(ctx)
    if ctx.api_version >= _TV2_FROM and ctx.world.config.flavor == Flavor.KAFKA_4:
        now = ctx.world.now_ms()
        error = service.coordinator.add_partitions(request.transactional_id, request.producer_id,
                                                   request.producer_epoch, {partition}, now, tv2=True)
        service.after(request.transactional_id, now)
        return error
    verdict = service.coordinator.verify_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch, [partition])[partition]
    return ErrorCode.INVALID_TXN_STATE if verdict is ErrorCode.TRANSACTION_ABORTABLE else verdict


def _group_error(ctx: RequestContext, request: Any) -> ErrorCode:
    group_id = request.group_id
    if not owns_group(ctx.world, ctx.broker.node_id, group_id):
        return ErrorCode.NOT_COORDINATOR
    error = _transaction_error(ctx, request)
    if error is not ErrorCode.NONE:
        return txn_common.for_version(error, ctx.api_version, 3)
    member_id, generation, instance = _member(ctx, request)
    if consumer_surface.holds(ctx.world, group_id):
        try:
            consumer_surface.consumer_groups(ctx.world).validate_offset_commit(
                group_id, member_id, generation, ctx.api_version, transactional=True, instance_id=instance)
        except KafkaError as exc:  # validateTransactionalOffsetCommit: a stale epoch is ILLEGAL_GENERATION
            return ErrorCode.ILLEGAL_GENERATION if exc.code is ErrorCode.STALE_MEMBER_EPOCH else exc.code
        return ErrorCode.NONE
    return service_of(ctx.world).validate_offset_commit(group_id, member_id, generation, instance, ctx.api_version,
                                                        transactional=True)


def _prepared(ctx: RequestContext, request: Any, errors: Errors
              ) -> Generator[None, None, tuple[dict[tuple[str, int], CommittedOffset], list[tuple[str, int]]]]:
    """The offsets to keep pending, made in steps, and those whose metadata is too large."""
    now = ctx.world.now_ms()
    limit = ctx.world.config.group.offset_metadata_max_bytes
    values: dict[tuple[str, int], CommittedOffset] = {}
    too_large: list[tuple[str, int]] = []
    pacer = Pacer()
    for topic in request.topics:
        for p in topic.partitions:
            yield from pacer.pause()
            key = (topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if key in errors:
                continue
            if len(metadata) > limit:
                too_large.append(key)
                continue
            epoch = getattr(p, "committed_leader_epoch", -1) if ctx.api_version >= 2 else -1
            values[key] = CommittedOffset(p.committed_offset, epoch, metadata, now, None)
    return values, too_large


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        return error_response(ctx.api_version, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authz.permits(ctx, authz.READ, authz.GROUP, request.group_id):
        return error_response(ctx.api_version, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return answer(_answer(ctx, request), sum(len(t.partitions) for t in request.topics))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """Checked and prepared in steps; the group's check and the pending offsets stored in one step
    (commitTransactionalOffset writes them as one batch), so the generation checked is the one used."""
    errors, passed = yield from _prechecked(ctx, request)
    if passed:
        values, too_large = yield from _prepared(ctx, request, errors)
        group_error = _group_error(ctx, request)
        if group_error is ErrorCode.NONE:
            offsets_of(ctx.world).pending.add_all(request.producer_id, request.group_id, values)
            errors.update(dict.fromkeys(too_large, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            errors.update(dict.fromkeys(values, ErrorCode.NONE))
        else:
            errors.update(dict.fromkeys(passed, group_error))
    yield
    return (yield from _response_steps(ctx.api_version, request, errors.__getitem__))


def _response_steps(api_version: int, request: Any, error_of: Any) -> Generator[None, None, Any]:
    topics, pacer = [], Pacer()
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            yield from pacer.pause()
            partitions.append(_PARTITION(partition_index=p.partition_index,
                                         error_code=error_of((t.name, p.partition_index))))
        topics.append(_TOPIC(name=t.name, partitions=partitions))
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics)


def _response(api_version: int, request: Any, error_of: Any) -> Any:
    topics = [_TOPIC(name=t.name, partitions=[_PARTITION(partition_index=p.partition_index,
                                                         error_code=error_of((t.name, p.partition_index)))
                                              for p in t.partitions])
              for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    """``TxnOffsetCommitRequest.getErrorResponse``: every partition with the error."""
    return _response(api_version, request, lambda _key: code)
