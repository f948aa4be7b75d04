"""Topic-level configs: the names each Kafka line accepts, their defaults and sources.

The tables are what Kafka 4.4 and 3.9.2 (KRaft, one broker, no broker overrides)
answered in CreateTopics v5+ for a new topic: every topic config, sorted by name,
with its default value and source. On 4.x ``min.insync.replicas`` comes from the
cluster-wide dynamic default the controller writes at bootstrap (KIP-966), hence
source DYNAMIC_DEFAULT_BROKER_CONFIG. Only ``message.timestamp.*`` and
``max.message.bytes`` change the emulator's behaviour; the rest are stored and echoed.

DescribeConfigs (:func:`describe`) adds each config's type and synonyms (``config_data``, from a real
broker) and the broker's dynamic overrides; IncrementalAlterConfigs/AlterConfigs compute the new
overrides with :func:`incremental` / :func:`check_all` as KRaft's ``ConfigurationControlManager``
and ``LogConfig.validate`` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator import config_data
from rebalance_lab.coordinator.config_values import LIST, ConfigEntry, Synonym, check_topic_value, shown
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from rebalance_lab.coordinator.broker_configs import BrokerConfigs

# Topic configs whose broker synonym has no default of its own (LogConfig's TopicConfigSynonyms)
TOPIC_SYNONYMS = {"retention.ms": "log.retention.ms", "segment.ms": "log.roll.ms",
                  "segment.jitter.ms": "log.roll.jitter.ms", "flush.ms": "log.flush.interval.ms"}

_LONG_MAX = "9223372036854775807"

SOURCE_TOPIC = 1  # DescribeConfigsResponse.ConfigSource.TOPIC_CONFIG
SOURCE_DYNAMIC_BROKER = 2  # DYNAMIC_BROKER_CONFIG
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
    check_all(clean, flavor)  # every value of its type and within LogConfig's validators
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


# -- DescribeConfigs / IncrementalAlterConfigs / AlterConfigs --------------------------------------

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}


def _schema(flavor: Flavor) -> dict[str, dict[str, object]]:
    topic: dict[str, dict[str, object]] = config_data.load(Flavor(flavor).value)["topic"]
    return topic


def _inherited(name: str, flavor: Flavor, brokers: BrokerConfigs | None, node_id: int) -> list[Synonym]:
    """The broker-level synonyms a topic config falls back to: dynamic, cluster default, then default.

    The data's synonyms are a default broker's; with ``brokers`` they come from its live configs."""
    stored: list[list[object]] = _schema(flavor)[name]["synonyms"]  # type: ignore[assignment]
    defaults: list[Synonym] = [(str(n), None if v is None else str(v), int(str(src))) for n, v, src in stored]
    broker_name = defaults[-1][0] if defaults else TOPIC_SYNONYMS.get(name)
    if brokers is None or broker_name is None:
        return defaults
    return brokers.synonyms(broker_name, node_id)


def describe(configs: dict[str, str], flavor: Flavor, brokers: BrokerConfigs | None = None, node_id: int = 1,
             include_synonyms: bool = False) -> list[ConfigEntry]:
    """Every topic config as DescribeConfigs reports it, sorted by name (Kafka's order is a HashMap's)."""
    entries = []
    for name, schema in sorted(_schema(flavor).items()):
        synonyms = _inherited(name, flavor, brokers, node_id)
        if name in configs:
            synonyms = [(name, shown(name, configs[name], int(schema["type"])), SOURCE_TOPIC), *synonyms]  # type: ignore[call-overload]
        value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (DEFAULTS[flavor][name], SOURCE_DEFAULT)
        entries.append(ConfigEntry(name, value, source, int(schema["type"]),  # type: ignore[call-overload]
                                   tuple(synonyms) if include_synonyms else ()))
    return entries


def config_type(name: str, flavor: Flavor) -> int | None:
    schema = _schema(flavor).get(name)
    return None if schema is None else int(schema["type"])  # type: ignore[call-overload]


def _parts(value: str | None, name: str, flavor: Flavor) -> list[str]:
    # ConfigurationControlManager.getParts: the current override, else the config's default
    source = value if value is not None else DEFAULTS[flavor].get(name)
    return [p for p in (source or "").split(",") if p]


def incremental(current: dict[str, str], ops: list[tuple[str, int, str | None]], flavor: Flavor) -> dict[str, str]:
    """The overrides after IncrementalAlterConfigs' operations (``incrementalAlterConfigResource``)."""
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET and value is not None:
            result[name] = value
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            if config_type(name, flavor) != LIST:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
            parts = _parts(result.get(name), name, flavor)
            for item in (value or "").split(","):
                if op == OP_APPEND and item not in parts:
                    parts.append(item)
                elif op == OP_SUBTRACT and item in parts:
                    parts.remove(item)
            result[name] = ",".join(parts)
        else:  # OpType.forId gives null: the controller fails with a NullPointerException
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR)
    return result


def check_all(configs: dict[str, str], flavor: Flavor) -> None:
    """``LogConfig.validate``: every name known, every value of its type and within its validator."""
    for name in configs:  # LogConfig.validateNames first, then the values
        if config_type(name, flavor) is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    for name, value in configs.items():
        check_topic_value(name, value, config_type(name, flavor) or 0, Flavor(flavor).value)
