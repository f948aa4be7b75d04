"""Topic-level configs: the names each Kafka line accepts, their defaults and sources.

The tables are what Kafka 4.4 and 3.9.2 (KRaft, one broker, no broker overrides)
answered in CreateTopics v5+ for a new topic: every topic config, sorted by name,
with its default value and source. On 4.x ``min.insync.replicas`` comes from the
cluster-wide dynamic default the controller writes at bootstrap (KIP-966), hence
source DYNAMIC_DEFAULT_BROKER_CONFIG. Only ``message.timestamp.type`` and
``max.message.bytes`` change the emulator's behaviour; the rest are stored and echoed.
"""

from __future__ import annotations

from rebalance_lab.config import Flavor
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_LONG_MAX = "9223372036854775807"

SOURCE_TOPIC = 1  # DescribeConfigsResponse.ConfigSource.TOPIC_CONFIG
SOURCE_DYNAMIC_DEFAULT_BROKER = 3  # DYNAMIC_DEFAULT_BROKER_CONFIG
SOURCE_DEFAULT = 5  # DEFAULT_CONFIG

_COMMON: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.type": "producer",
    "compression.zstd.level": "3",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": _LONG_MAX,
    "flush.ms": _LONG_MAX,
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": _LONG_MAX,
    "max.message.bytes": "1048588",
    "message.timestamp.before.max.ms": _LONG_MAX,
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}

_KAFKA_4_ONLY = {
    "errors.deadletterqueue.group.enable": "false",
    "max.decompressed.message.bytes": "2147483639",
    "message.timestamp.after.max.ms": "3600000",  # KIP-1030 lowered it in 4.0
    "remote.copy.lag.bytes": "-1",
    "remote.copy.lag.ms": "0",
}

_KAFKA_3_ONLY = {  # removed in 4.0 (KIP-724 / message format v0-v1 removal)
    "message.downconversion.enable": "true",
    "message.format.version": "3.0-IV1",
    "message.timestamp.after.max.ms": _LONG_MAX,
    "message.timestamp.difference.max.ms": _LONG_MAX,
}

DEFAULTS: dict[Flavor, dict[str, str]] = {
    Flavor.KAFKA_4: dict(sorted({**_COMMON, **_KAFKA_4_ONLY}.items())),
    Flavor.KAFKA_3: dict(sorted({**_COMMON, **_KAFKA_3_ONLY}.items())),
}
_DYNAMIC_DEFAULTS: dict[Flavor, frozenset[str]] = {
    Flavor.KAFKA_4: frozenset({"min.insync.replicas"}),
    Flavor.KAFKA_3: frozenset(),
}


def validate(configs: dict[str, str | None], flavor: Flavor = Flavor.KAFKA_4) -> dict[str, str]:
    """The configs a CreateTopics request set, checked by name (INVALID_CONFIG otherwise)."""
    clean: dict[str, str] = {}
    for name, value in configs.items():
        if name not in DEFAULTS[flavor]:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {name}")
        clean[name] = value
    timestamp_type = clean.get("message.timestamp.type")
    if timestamp_type is not None and timestamp_type not in ("CreateTime", "LogAppendTime"):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {timestamp_type} for configuration "
                         "message.timestamp.type: String must be one of: CreateTime, LogAppendTime")
    return clean


def _source(name: str, configs: dict[str, str], flavor: Flavor) -> int:
    if name in configs:
        return SOURCE_TOPIC
    return SOURCE_DYNAMIC_DEFAULT_BROKER if name in _DYNAMIC_DEFAULTS[flavor] else SOURCE_DEFAULT


def effective(configs: dict[str, str], flavor: Flavor = Flavor.KAFKA_4) -> list[tuple[str, str, int]]:
    """Every topic config as (name, value, source), sorted by name as Kafka lists them."""
    return [(name, configs.get(name, default), _source(name, configs, flavor))
            for name, default in DEFAULTS[flavor].items()]


def uses_log_append_time(configs: dict[str, str]) -> bool:
    return configs.get("message.timestamp.type") == "LogAppendTime"


def max_message_bytes(configs: dict[str, str]) -> int:
    return int(configs.get("max.message.bytes", _COMMON["max.message.bytes"]))
