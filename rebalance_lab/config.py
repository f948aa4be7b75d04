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
    api_versions: str = "codec"  # a preset name or a JSON file (see protocol/versions.py)
    group: GroupConfig = field(default_factory=GroupConfig)
    manual_clock: bool = False
    record_path: str | None = None
    explain: bool = False
    seed: int | None = None  # fixes member-id UUIDs and placement randomness when set
    control_port: int | None = None  # the HTTP/JSON control endpoint (off by default; 0 = any free port)
    control_host: str = "127.0.0.1"  # loopback only: the endpoint has no authentication
