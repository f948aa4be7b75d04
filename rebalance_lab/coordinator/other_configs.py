"""Config resources besides topics and brokers, as DescribeConfigs reports them (``ConfigHelper``, Kafka 4.4.0).

* group (4.x, KIP-848 group configs): every ``GroupConfig`` with the default a real broker reports
  (``config_data``), the emulator's ``group.consumer.*`` settings as STATIC_BROKER_CONFIG where they differ;
  groups have no overrides here (IncrementalAlterConfigs on groups is not served: FIDELITY.md);
* broker logger: the loggers whose level IncrementalAlterConfigs set (DYNAMIC_BROKER_LOGGER_CONFIG); a real
  broker lists every logger its log4j has created, which depends on its run, so none other is invented;
* client metrics (KIP-714): no subscription is ever created here, so any named one reports the defaults
  a real broker reports for a subscription it does not have.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator import config_data
from rebalance_lab.coordinator.config_values import SOURCE_DEFAULT, SOURCE_STATIC_BROKER, ConfigEntry, Synonym

SOURCE_DYNAMIC_BROKER_LOGGER = 6
# ClientMetricsConfigs' defaults, as 4.4.0 answers DescribeConfigs for an unknown subscription
_CLIENT_METRICS = (("interval.ms", "300000", 3), ("match", "", 7), ("metrics", "", 7))
LOGGERS_KEY = "broker_loggers"


def _group_statics(config: EmulatorConfig) -> dict[str, str]:
    group = config.consumer_group
    return {"group.consumer.session.timeout.ms": str(group.session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": str(group.heartbeat_interval_ms),
            "group.consumer.assignment.interval.ms": str(group.assignment_interval_ms)}


def describe_group(config: EmulatorConfig, include_synonyms: bool) -> list[ConfigEntry]:
    """A group's configs (all defaults: the emulator keeps no group overrides)."""
    schema: dict[str, dict[str, Any]] = config_data.load(Flavor(config.flavor).value).get("group", {})
    statics = _group_statics(config)
    entries = []
    for name, entry in sorted(schema.items()):
        synonyms: list[Synonym] = [(str(n), v, int(s)) for n, v, s in entry["synonyms"]]
        broker_name = synonyms[0][0] if synonyms else None
        value, source = entry["value"], SOURCE_DEFAULT
        if broker_name in statics and statics[broker_name] != entry["value"]:
            value, source = statics[broker_name], SOURCE_STATIC_BROKER
            synonyms = [(broker_name, value, SOURCE_STATIC_BROKER), *synonyms]
        entries.append(ConfigEntry(name, value, source, int(entry["type"]),
                                   tuple(synonyms) if include_synonyms else ()))
    return entries


def logger_levels(world: Any) -> dict[str, str]:
    found: dict[str, str] | None = world.services.get(LOGGERS_KEY)
    if found is None:
        found = world.services[LOGGERS_KEY] = {}
    return found


def describe_loggers(world: Any) -> list[ConfigEntry]:
    return [ConfigEntry(name, level, SOURCE_DYNAMIC_BROKER_LOGGER, 0)
            for name, level in sorted(logger_levels(world).items())]


def describe_client_metrics() -> list[ConfigEntry]:
    return [ConfigEntry(name, value, SOURCE_DEFAULT, kind) for name, value, kind in _CLIENT_METRICS]
