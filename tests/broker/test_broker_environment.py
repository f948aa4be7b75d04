"""How broker settings become the container's environment (no broker needed)."""

from __future__ import annotations

from tests.support.kafka_broker import broker_environment, normalize_settings, property_env_name


def test_property_names_follow_the_official_image_convention() -> None:
    assert property_env_name("group.initial.rebalance.delay.ms") == "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"
    assert property_env_name("listener.name.internal.ssl_thing") == "KAFKA_LISTENER_NAME_INTERNAL_SSL__THING"
    assert property_env_name("some-dashed.name") == "KAFKA_SOME___DASHED_NAME"


def test_settings_override_the_session_defaults() -> None:
    settings = normalize_settings("3", {"group.initial.rebalance.delay.ms": 3000, "auto.create.topics.enable": False})
    assert settings["group.initial.rebalance.delay.ms"] == "3000"
    assert settings["auto.create.topics.enable"] == "false"
    assert settings["offsets.topic.num.partitions"] == "1"
    assert "share.coordinator.state.topic.replication.factor" not in settings
    assert normalize_settings("4", None)["share.coordinator.state.topic.replication.factor"] == "1"


def test_the_broker_advertises_the_mapped_port() -> None:
    env = broker_environment(40123, normalize_settings("4", None))
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://127.0.0.1:40123"
    assert env["KAFKA_LISTENERS"].startswith("PLAINTEXT://0.0.0.0:40123,")
    assert env["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"] == "0"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["CLUSTER_ID"]
