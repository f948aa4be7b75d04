"""Every option of ``rebalance-lab serve``, as one typed value.

The CLI, the Python API and the pytest plugin all build an :class:`EmulatorConfig`;
defaults are Kafka's own (spec/coordinator.md §2) unless noted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Flavor(StrEnum):
    """Which real coordinator the emulator imitates (spec/coordinator.md §0.2, §15)."""

    KAFKA_4 = "kafka-4"  # the Java group coordinator of Kafka 4.x
    KAFKA_3 = "kafka-3"  # the Scala group coordinator of Kafka 3.x


JOIN_RACES = ("sampled", "separate", "together")


@dataclass(frozen=True)
class GroupConfig:
    """Group coordinator settings (``GroupCoordinatorConfig``); all overridable."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    max_size: int = 2_147_483_647
    new_member_join_timeout_ms: int = 300_000
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    # Who wins when a zero initial delay expires while other members' JoinGroups are arriving (issue 18):
    # "sampled" (a seeded expiration latency, as a broker's timer thread and event queue give), "separate"
    # (the expiration fires at once: the first rejoin is alone in generation 1), "together" (it waits for
    # every member that was handed an id). See rebalance_lab/coordinator/join_race.py.
    join_race: str = "sampled"

    def __post_init__(self) -> None:
        if self.join_race not in JOIN_RACES:
            raise ValueError(f"join_race must be one of {', '.join(JOIN_RACES)}, not {self.join_race!r}")


MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


class ConsumerGroupConfigError(ValueError):
    """A ``group.consumer.*`` combination Kafka refuses at start-up (message as Kafka's ConfigException)."""


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """KIP-848 consumer group settings (``GroupCoordinatorConfig``, Kafka 4.4.0 defaults and bounds)."""

    session_timeout_ms: int = 45_000
    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 5_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000
    max_size: int = 2_147_483_647
    assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    migration_policy: str = "bidirectional"
    # 4.4: a new target assignment at most once per interval (group.consumer.assignment.interval.ms)
    assignment_interval_ms: int = 1_000
    min_assignment_interval_ms: int = 0
    max_assignment_interval_ms: int = 15_000
    regex_refresh_interval_ms: int = 600_000

    def __post_init__(self) -> None:
        for problem in consumer_config_problems(self):
            raise ConsumerGroupConfigError(problem)


def _ge(name: str, other: str) -> str:
    return f"group.consumer.{name} must be greater than or equal to group.consumer.{other}"


def consumer_config_problems(c: ConsumerGroupConfig) -> list[str]:
    """``GroupCoordinatorConfig.verifyConsumerGroupConfigs`` in its order (then the value checks of the defs)."""
    checks = [
        (c.max_heartbeat_interval_ms >= c.min_heartbeat_interval_ms,
         _ge("max.heartbeat.interval.ms", "min.heartbeat.interval.ms")),
        (c.heartbeat_interval_ms >= c.min_heartbeat_interval_ms,
         _ge("heartbeat.interval.ms", "min.heartbeat.interval.ms")),
        (c.heartbeat_interval_ms <= c.max_heartbeat_interval_ms, "group.consumer.heartbeat.interval.ms must be less "
         "than or equal to group.consumer.max.heartbeat.interval.ms"),
        (c.max_session_timeout_ms >= c.min_session_timeout_ms, _ge("max.session.timeout.ms", "min.session.timeout.ms")),
        (c.session_timeout_ms >= c.min_session_timeout_ms, _ge("session.timeout.ms", "min.session.timeout.ms")),
        (c.session_timeout_ms <= c.max_session_timeout_ms, "group.consumer.session.timeout.ms must be less than or "
         "equal to group.consumer.max.session.timeout.ms"),
        (c.heartbeat_interval_ms < c.session_timeout_ms,
         "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
        (c.max_assignment_interval_ms >= c.min_assignment_interval_ms,
         _ge("max.assignment.interval.ms", "min.assignment.interval.ms")),
        (c.assignment_interval_ms >= c.min_assignment_interval_ms,
         _ge("assignment.interval.ms", "min.assignment.interval.ms")),
        (c.assignment_interval_ms <= c.max_assignment_interval_ms, "group.consumer.assignment.interval.ms must be "
         "less than or equal to group.consumer.max.assignment.interval.ms"),
        (c.max_size >= 1, "Invalid value 0 for configuration group.consumer.max.size: Value must be at least 1"
         if c.max_size == 0 else f"Invalid value {c.max_size} for configuration group.consumer.max.size: "
         "Value must be at least 1"),
        (bool(c.assignors) and all(a in ("uniform", "range") for a in c.assignors),
         f"Invalid value {','.join(c.assignors)} for configuration group.consumer.assignors: the known server "
         "assignors are uniform and range"),
        (c.migration_policy.lower() in MIGRATION_POLICIES,
         f"Invalid value {c.migration_policy} for configuration group.consumer.migration.policy: String must be "
         "one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"),
    ]
    return [message for ok, message in checks if not ok]


# Addresses that mean "every interface" to a listener and nothing to a client that connects to them.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})


def wildcard_advertised_message(host: str) -> str:
    """Kafka's KafkaConfig.validateValues refusal (4.4.0 checks 0.0.0.0; the emulator also refuses ::)."""
    return (f"advertised.listeners cannot use the nonroutable meta-address {host}. Use a routable IP address "
            "(listening on every interface needs --advertised-host, or advertised_host=, naming the host "
            "clients connect to)")


@dataclass(frozen=True)
class EmulatorConfig:
    host: str = "127.0.0.1"
    port: int = 9092  # the first broker's port; broker i listens on port + i (0 = any free port)
    advertised_host: str | None = None  # the host given to clients (Metadata, FindCoordinator); None: host
    advertised_port: int | None = None  # broker i advertises advertised_port + i; None or 0: the bound port
    brokers: int = 1
    racks: tuple[str | None, ...] = ()  # one per broker, or empty for no racks
    cluster_id: str = "rebalance-lab-cluster"
    flavor: Flavor = Flavor.KAFKA_4
    auto_create_topics: bool = True
    num_partitions: int = 1  # Kafka's num.partitions default
    default_replication_factor: int = 1
    placement: str = "auto"  # replica placer: auto (by flavor), striped (KRaft) or adminutils (ZooKeeper era)
    topics: tuple[tuple[str, int], ...] = ()  # topics created at start-up: (name, partitions)
    max_request_bytes: int = 104_857_600  # socket.request.max.bytes
    connections_max_idle_ms: int = 600_000  # connections.max.idle.ms (negative: never close idle ones)
    # Security (rebalance_lab/security): one listener protocol for every emulated broker
    listener: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    sasl_mechanisms: tuple[str, ...] = ()  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (SASL listeners: default PLAIN)
    users: tuple[str, ...] = ()  # NAME:PASSWORD, for every enabled mechanism
    users_file: str | None = None  # JSON {"name": "password"} or NAME:PASSWORD lines
    ssl_certfile: str | None = None  # PEM certificate chain of the brokers
    ssl_keyfile: str | None = None  # PEM private key (None: in the certfile)
    ssl_cafile: str | None = None  # PEM CA of client certificates: mutual TLS (ssl.client.auth=required)
    additional_listeners: tuple[str, ...] = ()  # PROTOCOL[:PORT], each also on every broker (security/additional.py)
    # Authorization (security/authorizer.py): Kafka's StandardAuthorizer, on when acl_file is set
    acl_file: str | None = None  # JSON {"acls": [...]} loaded at start (README, "Authorization")
    super_users: tuple[str, ...] = ()  # super.users, principals as "User:NAME"
    allow_everyone_if_no_acl_found: bool = False  # allow.everyone.if.no.acl.found
    api_versions: str = "codec"  # a preset name or a JSON file (see protocol/versions.py)
    group: GroupConfig = field(default_factory=GroupConfig)
    consumer_group: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)  # KIP-848 groups (kafka-4)
    manual_clock: bool = False
    record_path: str | None = None
    # Durability (rebalance_lab/storage): None keeps everything in memory, as before
    data_dir: str | None = None  # serve --data-dir: topics, logs, offsets and groups survive a restart
    flush_messages: int | None = None  # flush.messages: fsync after N messages (None: never, Kafka's default)
    flush_ms: int | None = None  # flush.ms: fsync what has waited this long (None: never, Kafka's default)
    explain: bool = False
    seed: int | None = None  # fixes member-id UUIDs and placement randomness when set
    control_port: int | None = None  # the HTTP/JSON control endpoint (off by default; 0 = any free port)
    control_host: str = "127.0.0.1"  # loopback only: the endpoint can stop brokers
    control_token: str | None = None  # when set, every control request needs "Authorization: Bearer <token>"
    # the toolkit's generation history: entries kept per group and in all (oldest dropped first); 0 turns it off
    history_limit: int = 1_000
    history_total_limit: int = 10_000

    def __post_init__(self) -> None:
        advertised = self.advertised_host or self.host
        if advertised in WILDCARD_HOSTS:
            raise ValueError(wildcard_advertised_message(advertised))
