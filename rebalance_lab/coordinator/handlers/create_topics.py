"""CreateTopics (19), v2-7, as KRaft's ``ControllerApis.createTopics`` and
``ReplicationControlManager.createTopics`` answer it.

* results of the distinct names come first, in request order; a name given more
  than once gets one INVALID_REQUEST "Duplicate topic name." result, after them,
  in ``java.util.HashSet`` order (checked against Kafka 4.4);
* ``num_partitions`` / ``replication_factor`` of -1 take ``num.partitions`` /
  ``default.replication.factor``; manual ``assignments`` need both at -1 and are
  validated as ``validateManualPartitionAssignment`` does;
* ``validate_only`` checks everything and creates nothing (the result still has a
  fresh topic id, as in Kafka);
* unknown config names -> INVALID_CONFIG;
* v5+ echoes partitions, replication factor and every topic config of the flavor's
  Kafka line with its source (``topic_configs.py``); a failed topic has -1/-1 and an
  empty config list. Verified field by field against Kafka 4.4 and 3.9.2;
* a request over the controller's 10,000-record bound fails as a whole, every topic
  (duplicates included) in request order with POLICY_VIOLATION (``controller_limits.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import controller_limits, topic_configs
from rebalance_lab.coordinator.cluster import TopicInfo
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, chunks, counted
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 19
_RESULT = codec.response_type(API_KEY).CreatableTopicResult
_CONFIG = _RESULT.CreatableTopicConfigs


def java_set_order(names: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashSet`` filled with ``names`` in order."""
    # From protocol/ (loaded at start), not the assignors' alias: their package loads every assignor (~60 ms of
    # a fresh serve process's first CreateTopics)
    from rebalance_lab.protocol.java_hashmap import UnsupportedJavaOrder, string_hash_order

    try:
        return string_hash_order(names)
    except UnsupportedJavaOrder:  # a tree bin (huge collision chains): keep request order
        return names


def _create(ctx: RequestContext, topic: Any, validate_only: bool) -> TopicInfo:
    assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments or []}
    configs = {c.name: c.value for c in topic.configs or []}
    return ctx.world.cluster.create_topic(
        topic.name, topic.num_partitions, topic.replication_factor,
        assignments=assignments or None, configs=configs, validate_only=validate_only,
    )


def _success(info: TopicInfo, flavor: Flavor) -> Any:
    configs = [
        _CONFIG(name=name, value=value, read_only=False, config_source=source, is_sensitive=False)
        for name, value, source in topic_configs.effective(info.configs, flavor)
    ]
    return _RESULT(name=info.name, topic_id=info.topic_id, error_code=ErrorCode.NONE, error_message=None,
                   num_partitions=len(info.partitions), replication_factor=len(info.partitions[0].replicas),
                   configs=configs)


def _failure(name: str, code: ErrorCode, message: str | None) -> Any:
    return _RESULT(name=name, error_code=code, error_message=message, num_partitions=-1,
                   replication_factor=-1, configs=[])


def _records_if_created(ctx: RequestContext, topic: Any) -> int:
    """The records creating ``topic`` would write, or 0 if it would fail (a validate-only dry run).

    A topic asking for more partitions than the bound is validated with one partition, so the
    dry run never places more than the bound.
    """
    configs = len(topic.configs or [])
    requested = controller_limits.requested_partitions([topic], ctx.world.config.num_partitions)
    try:
        if requested > controller_limits.MAX_RECORDS_PER_USER_OP:
            _create(ctx, _one_partition(topic), validate_only=True)
            return controller_limits.creation_records(requested, configs)
        info = _create(ctx, topic, validate_only=True)
    except KafkaError:
        return 0
    return controller_limits.creation_records(len(info.partitions), configs)


def _one_partition(topic: Any) -> Any:
    return type(topic)(name=topic.name, num_partitions=1, replication_factor=topic.replication_factor,
                       assignments=[], configs=topic.configs)


def _over_record_bound(ctx: RequestContext, topics: list[Any], counts: Counter[str]) -> Generator[None, None, bool]:
    """Whether the topics that would be created write more records than the controller's bound."""
    distinct = [t for t in topics if counts[t.name] == 1]
    default = ctx.world.config.num_partitions
    pacer, upper = Pacer(), 0
    for t in distinct:
        yield from pacer.pause()
        upper += controller_limits.creation_records(controller_limits.requested_partitions([t], default),
                                                    len(t.configs or []))
    if upper <= controller_limits.MAX_RECORDS_PER_USER_OP:
        return False  # the common case: no dry run
    total = 0
    for t in distinct:  # a dry run changes nothing: the world may change between two steps of it
        yield from pacer.pause()
        total += _records_if_created(ctx, t)
    return total > controller_limits.MAX_RECORDS_PER_USER_OP


def _request_error(ctx: RequestContext, topics: list[Any], counts: Counter[str]) -> Generator[None, None, str | None]:
    default, requested = ctx.world.config.num_partitions, 0
    for chunk in chunks(topics):  # controller_limits.create_topics_error, a step's worth of topics at a time
        yield
        requested += controller_limits.requested_partitions(chunk, default)
    message = controller_limits.TOO_MANY_PARTITIONS if requested > controller_limits.MAX_RECORDS_PER_USER_OP else None
    if message is None and (yield from _over_record_bound(ctx, topics, counts)):
        message = controller_limits.BATCH_TOO_LARGE
    return message


def _not_creatable(ctx: RequestContext, names: list[str]) -> list[str]:
    """ControllerApis.createTopics: CREATE on the cluster allows every topic, else CREATE on each topic."""
    if authz.permits_cluster(ctx, authz.CREATE):
        return []
    return [name for name in names if not authz.permits(ctx, authz.CREATE, authz.TOPIC, name)]


def _described(ctx: RequestContext, result: Any) -> Any:
    """A created topic's configs only for a caller allowed DESCRIBE_CONFIGS on it (ReplicationControlManager)."""
    if not authz.permits(ctx, authz.DESCRIBE_CONFIGS, authz.TOPIC, result.name):
        result.configs = []
        result.topic_config_error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return result


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_answer(ctx, request), len(request.topics))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """Checked in steps; created in one go. The controller writes a request's topics as one atomic batch
    (ReplicationControlManager.createTopics), which its 10,000-record bound keeps small; a request over
    the bound, or one that only validates, changes nothing and is worked through in steps."""
    counts = yield from counted(t.name for t in request.topics)
    refused = yield from _request_error(ctx, list(request.topics), counts)
    pacer = Pacer()
    if refused is not None:  # the controller failed the whole request: every topic, in request order
        failed = []
        for t in request.topics:
            yield from pacer.pause()
            failed.append(_failure(t.name, ErrorCode.POLICY_VIOLATION, refused))
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=failed)
    validate_only = bool(getattr(request, "validate_only", False))
    refused_names = _not_creatable(ctx, [n for n, c in counts.items() if c == 1])
    results: list[Any] = []
    for topic in request.topics:
        if validate_only:
            yield from pacer.pause()
        if counts[topic.name] > 1 or topic.name in refused_names:
            continue
        try:
            results.append(_described(ctx, _success(_create(ctx, topic, validate_only), ctx.world.config.flavor)))
        except KafkaError as exc:
            results.append(_failure(topic.name, exc.code, str(exc)))
    duplicates = java_set_order(list(dict.fromkeys(n for n, c in counts.items() if c > 1)))
    results.extend(_failure(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for name in duplicates)
    results.extend(_failure(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                   for name in java_set_order(refused_names))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=results)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    results = [_failure(t.name, code, None) for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=results)
