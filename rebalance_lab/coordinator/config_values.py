"""Checking one config value as Kafka's ``ConfigDef`` does: its type, then its validator.

The messages are ``ConfigException``'s, "Invalid value V for configuration NAME: REASON", as Kafka
4.4.0 and 3.9.2 answer them in IncrementalAlterConfigs/AlterConfigs/CreateTopics (checked on the
brokers, tests/admin). Types are DescribeConfigs' ``ConfigType`` codes. The validators are the
ones ``LogConfig`` declares for topic configs; a config without one here accepts any value of its
type (the compression levels' validators are not emulated: FIDELITY.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_lab.protocol.errors import ErrorCode, KafkaError

BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)
_TYPE_NAMES = {INT: "INT", SHORT: "SHORT", LONG: "LONG", DOUBLE: "DOUBLE"}
_BOUNDS = {INT: (-(2**31), 2**31 - 1), SHORT: (-(2**15), 2**15 - 1), LONG: (-(2**63), 2**63 - 1)}

# LogConfig's atLeast / between validators: name -> (minimum, maximum or None)
TOPIC_RANGES: dict[str, tuple[float, float | None]] = {
    "segment.ms": (1, None), "segment.jitter.ms": (0, None), "segment.index.bytes": (4, None),
    "flush.messages": (1, None), "flush.ms": (0, None), "retention.ms": (-1, None),
    "max.message.bytes": (0, None), "index.interval.bytes": (0, None), "delete.retention.ms": (0, None),
    "min.compaction.lag.ms": (0, None), "max.compaction.lag.ms": (1, None), "file.delete.delay.ms": (0, None),
    "min.cleanable.dirty.ratio": (0, 1), "min.insync.replicas": (1, None),
    "message.timestamp.before.max.ms": (0, None), "message.timestamp.after.max.ms": (0, None),
    "message.timestamp.difference.max.ms": (0, None), "local.retention.ms": (-2, None),
    "local.retention.bytes": (-2, None),
}
SEGMENT_BYTES_MINIMUM = {"kafka-4": 1_048_576, "kafka-3": 14}  # 4.x raised it (KIP-1030); 3.x: RECORD_OVERHEAD_V0
TOPIC_CHOICES: dict[str, tuple[str, ...]] = {
    "cleanup.policy": ("compact", "delete"),
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}


def invalid(name: str, value: object, reason: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {reason}")


def parse(name: str, value: str, config_type: int) -> int | float | bool | str | list[str]:
    """``ConfigDef.parseType``: the value trimmed and parsed, or INVALID_CONFIG with Kafka's reason."""
    trimmed = value.strip()
    if config_type == BOOLEAN:
        if trimmed.lower() not in ("true", "false"):
            raise invalid(name, trimmed, "Expected value to be either true or false")
        return trimmed.lower() == "true"
    if config_type in _BOUNDS:
        low, high = _BOUNDS[config_type]
        try:
            number = int(trimmed, 10)
        except ValueError:
            number = None
        if number is None or not low <= number <= high or not trimmed.lstrip("+-").isdigit():
            raise invalid(name, trimmed, f"Not a number of type {_TYPE_NAMES[config_type]}")
        return number
    if config_type == DOUBLE:
        try:
            return float(trimmed)
        except ValueError:
            raise invalid(name, trimmed, "Not a number of type DOUBLE") from None
    if config_type == LIST:
        return [part.strip() for part in trimmed.split(",")] if trimmed else []
    return trimmed


def shown(name: str, value: str, config_type: int) -> str:
    """A stored value as DescribeConfigs shows it: parsed and written back (``ConfigDef.convertToString``),
    so " TRUE " reads "true"; a value that does not parse is shown as stored."""
    try:
        parsed = parse(name, value, config_type)
    except KafkaError:
        return value
    if isinstance(parsed, bool):
        return "true" if parsed else "false"
    if isinstance(parsed, list):
        return ",".join(parsed)
    return _java_number(parsed) if isinstance(parsed, (int, float)) else parsed


def _java_number(value: int | float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def check_topic_value(name: str, value: str, config_type: int, flavor: str) -> None:
    """Type and validator of one topic config value (``LogConfig.validate``'s per-value part)."""
    parsed = parse(name, value, config_type)
    bounds = TOPIC_RANGES.get(name)
    if name == "segment.bytes":
        bounds = (SEGMENT_BYTES_MINIMUM[flavor], None)
    if bounds is not None and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        low, high = bounds
        if parsed < low:
            raise invalid(name, _java_number(parsed), f"Value must be at least {_java_number(low)}")
        if high is not None and parsed > high:
            raise invalid(name, _java_number(parsed), f"Value must be no more than {_java_number(high)}")
    choices = TOPIC_CHOICES.get(name)
    if choices is None:
        return
    for item in parsed if isinstance(parsed, list) else [str(parsed)]:
        if item not in choices:  # ValidList names the item it refuses, ValidString the value
            raise invalid(name, item, f"String must be one of: {', '.join(choices)}")


# DescribeConfigsResponse.ConfigSource
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER = 1, 2, 3
SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 4, 5
Synonym = tuple[str, str | None, int]  # name, value, source


@dataclass(frozen=True)
class ConfigEntry:
    """One config as DescribeConfigs reports it."""

    name: str
    value: str | None
    source: int
    config_type: int
    synonyms: tuple[Synonym, ...] = ()
    read_only: bool = False
    sensitive: bool = False
