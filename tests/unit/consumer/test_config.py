"""``group.consumer.*``: Kafka 4.4.0's defaults, its start-up checks, the serve flags and Emulator kwargs."""

from __future__ import annotations

import pytest

from rebalance_lab.api import make_config
from rebalance_lab.cli import build_parser, config_from_args
from rebalance_lab.config import ConsumerGroupConfig, ConsumerGroupConfigError


def test_the_defaults_are_kafka_4_4s() -> None:
    c = ConsumerGroupConfig()
    assert (c.session_timeout_ms, c.min_session_timeout_ms, c.max_session_timeout_ms) == (45_000, 45_000, 60_000)
    assert (c.heartbeat_interval_ms, c.min_heartbeat_interval_ms, c.max_heartbeat_interval_ms) == (5_000, 5_000,
                                                                                                   15_000)
    assert (c.max_size, c.assignors, c.migration_policy, c.assignment_interval_ms) == (
        2_147_483_647, ("uniform", "range"), "bidirectional", 1_000)


@pytest.mark.parametrize(("changes", "message"), [
    ({"heartbeat_interval_ms": 20_000}, "group.consumer.heartbeat.interval.ms must be less than or equal to "
                                        "group.consumer.max.heartbeat.interval.ms"),
    ({"session_timeout_ms": 30_000}, "group.consumer.session.timeout.ms must be greater than or equal to "
                                     "group.consumer.min.session.timeout.ms"),
    ({"heartbeat_interval_ms": 15_000, "session_timeout_ms": 15_000, "min_session_timeout_ms": 10_000},
     "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
    ({"migration_policy": "sideways"}, "Invalid value sideways for configuration group.consumer.migration.policy: "
                                       "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, "
                                       "BIDIRECTIONAL"),
])
def test_a_combination_kafka_refuses_at_start_up_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConsumerGroupConfigError) as exc:
        ConsumerGroupConfig(**changes)  # type: ignore[arg-type]
    assert str(exc.value) == message


def test_serve_flags_and_emulator_kwargs_set_the_consumer_group_config() -> None:
    args = build_parser().parse_args(["serve", "--consumer-session-timeout-ms", "50000", "--consumer-assignors",
                                      "range,uniform", "--consumer-max-size", "3"])
    c = config_from_args(args).consumer_group
    assert (c.session_timeout_ms, c.assignors, c.max_size) == (50_000, ("range", "uniform"), 3)
    c = make_config(consumer_heartbeat_interval_ms=6_000, consumer_assignors=["range"]).consumer_group
    assert (c.heartbeat_interval_ms, c.assignors) == (6_000, ("range",))
