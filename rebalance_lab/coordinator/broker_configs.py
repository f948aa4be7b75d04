"""Broker config resources: what DescribeConfigs reports for a broker and the dynamic configs set on it.

A real broker reports every ``KafkaConfig`` entry with its value and source: DYNAMIC_BROKER_CONFIG (set
with IncrementalAlterConfigs on resource "<node id>"), DYNAMIC_DEFAULT_BROKER_CONFIG (resource "", for
the whole cluster), STATIC_BROKER_CONFIG (server.properties; here the emulator's own settings) or
DEFAULT_CONFIG. The names, defaults, flags and types come from a real broker (``config_data``).
Dynamic values are stored and reported; the few the emulator models take effect through the topic
configs they are synonyms of (``topic_configs``). Kafka's ``DynamicBrokerConfig`` rules: read-only
configs cannot be altered ("Cannot update these configs dynamically: [...]").
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator import config_data
from rebalance_lab.coordinator.config_values import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    ConfigEntry,
    Synonym,
    parse,
)
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

SERVICE_KEY = "broker_configs"
# DynamicBrokerConfig's synonym families: the first name wins over the others
_FAMILIES = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}


def _statics(config: EmulatorConfig, node_id: int, address: str) -> dict[str, str]:
    """The emulator's own settings as the server.properties entries a broker would have."""
    group, listener = config.group, config.listener
    values = {
        "node.id": str(node_id), "broker.id": str(node_id),
        "listeners": f"{listener}://{address}", "advertised.listeners": f"{listener}://{address}",
        "inter.broker.listener.name": listener, "controller.listener.names": "CONTROLLER",
        "process.roles": "broker,controller", "log.dirs": config.data_dir or "/tmp/kraft-combined-logs",
        "num.partitions": str(config.num_partitions),
        "default.replication.factor": str(config.default_replication_factor),
        "auto.create.topics.enable": str(config.auto_create_topics).lower(),
        "group.initial.rebalance.delay.ms": str(group.initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(group.min_session_timeout_ms),
        "group.max.session.timeout.ms": str(group.max_session_timeout_ms),
        "group.max.size": str(group.max_size),
        "offsets.topic.num.partitions": str(group.offsets_topic_num_partitions),
        "socket.request.max.bytes": str(config.max_request_bytes),
        "connections.max.idle.ms": str(config.connections_max_idle_ms),
    }
    return values


class BrokerConfigs:
    """The broker resources of one emulated cluster (per-broker and cluster-wide dynamic configs)."""

    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.flavor = Flavor(config.flavor)
        data = config_data.load(self.flavor.value)
        self.schema: dict[str, dict[str, Any]] = data["broker"]
        self.cluster_defaults: dict[str, str] = dict(data["cluster_dynamic_defaults"])
        self.per_broker: dict[int, dict[str, str]] = {}

    # -- describe ------------------------------------------------------------------------

    def synonyms(self, name: str, node_id: int, static: dict[str, str] | None = None) -> list[Synonym]:
        """``DynamicBrokerConfig``'s synonyms of one broker config name, most specific first.

        A name of a family (log.retention.ms/minutes/hours, ...) set at some level is followed by the
        defaults of the whole family, as a real broker lists them; unset, only by its own default."""
        found: list[Synonym] = []
        dynamic = self.per_broker.get(node_id, {})
        if name in dynamic:
            found.append((name, self._shown(name, dynamic[name]), SOURCE_DYNAMIC_BROKER))
        if name in self.cluster_defaults:
            found.append((name, self._shown(name, self.cluster_defaults[name]), SOURCE_DYNAMIC_DEFAULT_BROKER))
        if static and name in static and static[name] != self.schema.get(name, {}).get("value"):
            found.append((name, static[name], SOURCE_STATIC_BROKER))
        family = _FAMILIES.get(name, (name,)) if found else (name,)
        for member in family:
            entry = self.schema.get(member)
            if entry is not None:
                found.extend((n, v, s) for n, v, s in entry["synonyms"])
        return found

    def _shown(self, name: str, value: str) -> str | None:
        return None if self.schema.get(name, {}).get("sensitive") else value

    def describe(self, node_id: int, address: str, include_synonyms: bool) -> list[ConfigEntry]:
        """Every config of broker ``node_id``, sorted by name."""
        static = _statics(self.config, node_id, address)
        entries = []
        for name, entry in self.schema.items():
            synonyms = self.synonyms(name, node_id, static)
            if synonyms and synonyms[0][2] != SOURCE_DEFAULT:
                value, source = synonyms[0][1], synonyms[0][2]
            elif name in static and (entry.get("static") or static[name] != entry["value"]):
                value, source = static[name], SOURCE_STATIC_BROKER
                synonyms = [(name, value, SOURCE_STATIC_BROKER), *synonyms]
            else:
                value, source = entry["value"], SOURCE_DEFAULT
            entries.append(ConfigEntry(name, value, source, entry["type"],
                                       tuple(synonyms) if include_synonyms else (),
                                       entry["read_only"], entry["sensitive"]))
        return entries

    def describe_cluster_defaults(self, include_synonyms: bool) -> list[ConfigEntry]:
        """Resource "": only the cluster-wide dynamic configs (``currentDynamicDefaultConfigs``)."""
        entries = []
        for name, value in sorted(self.cluster_defaults.items()):
            schema = self.schema.get(name, {"type": 2, "read_only": False, "sensitive": False})
            shown = self._shown(name, value)
            synonyms = ((name, shown, SOURCE_DYNAMIC_DEFAULT_BROKER),) if include_synonyms else ()
            entries.append(ConfigEntry(name, shown, SOURCE_DYNAMIC_DEFAULT_BROKER, schema["type"], synonyms,
                                       schema["read_only"], schema["sensitive"]))
        return entries

    # -- alter ---------------------------------------------------------------------------

    def current(self, node_id: int | None) -> dict[str, str]:
        """The dynamic configs of a broker, or of the cluster default (None)."""
        return self.cluster_defaults if node_id is None else self.per_broker.get(node_id, {})

    def check(self, changes: dict[str, str | None]) -> None:
        """``DynamicBrokerConfig.validate``: read-only names and unparsable values are refused."""
        fixed = [name for name in changes if self.schema.get(name, {}).get("read_only")]
        if fixed:
            names = ", ".join(fixed)  # 3.9.2 prints a Scala Set, 4.4.0 a Java list
            shown = f"Set({names})" if self.flavor == Flavor.KAFKA_3 else f"[{names}]"
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {shown}")
        for name, value in changes.items():
            schema = self.schema.get(name)
            if schema is not None and value is not None:
                try:
                    parse(name, value, int(schema["type"]))
                except KafkaError as exc:  # KAFKA-13609: a broker config that fails validation is INVALID_REQUEST
                    raise KafkaError(ErrorCode.INVALID_REQUEST, str(exc)) from exc

    def replace(self, node_id: int | None, configs: dict[str, str]) -> None:
        if node_id is None:
            self.cluster_defaults = dict(configs)
        else:
            self.per_broker[node_id] = dict(configs)


def of(world: Any) -> BrokerConfigs:
    """The world's broker configs, created on first use."""
    found = world.services.get(SERVICE_KEY)
    if found is None:
        found = world.services[SERVICE_KEY] = BrokerConfigs(world.config)
    return found  # type: ignore[no-any-return]
