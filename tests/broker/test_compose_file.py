"""docker/compose.yaml, checked without Docker: the emulator beside an official Kafka broker.

No Docker Compose can run on the project's machines; this reads the file and checks that
each service publishes a loopback port and advertises exactly that address, and that both
run with the same group settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rebalance_lab.cli import build_parser
from tests.support.kafka_broker import load_build_script

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO_ROOT / "docker" / "compose.yaml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _published(service: dict[str, Any]) -> tuple[str, int, int]:
    """The one port mapping of a service: (host ip, host port, container port)."""
    (mapping,) = service["ports"]
    host_ip, host_port, container_port = str(mapping).split(":")
    return host_ip, int(host_port), int(container_port)


def test_two_services(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"emulator", "kafka"}


def test_the_emulator_is_built_from_the_recipe(compose: dict[str, Any]) -> None:
    build = compose["services"]["emulator"]["build"]
    context = (COMPOSE_FILE.parent / build["context"]).resolve()
    assert context == REPO_ROOT
    assert (context / build["dockerfile"]).is_file()
    assert build["args"]["BASE_IMAGE"] == load_build_script().DOCKER_PYTHON_BASE_IMAGE
    # What the Containerfile copies exists in that context.
    for needed in ("pyproject.toml", "README.md", "rebalance_lab", "docker/emulator/entrypoint.sh"):
        assert (context / needed).exists(), needed


def test_the_emulator_advertises_its_published_port(compose: dict[str, Any]) -> None:
    service = compose["services"]["emulator"]
    host_ip, host_port, container_port = _published(service)
    env = service["environment"]
    assert host_ip == "127.0.0.1"
    assert int(env["REBALANCE_LAB_PORT"]) == container_port
    assert (env["REBALANCE_LAB_ADVERTISED_HOST"], int(env["REBALANCE_LAB_ADVERTISED_PORT"])) == ("localhost", host_port)
    # The extra arguments are valid `serve` options.
    build_parser().parse_args(["serve", *service["command"]])


def test_kafka_is_the_official_image_advertising_its_published_port(compose: dict[str, Any]) -> None:
    service = compose["services"]["kafka"]
    assert service["image"] == load_build_script().KAFKA_RELEASES["4"].official_image
    host_ip, host_port, container_port = _published(service)
    env = service["environment"]
    assert host_ip == "127.0.0.1"
    assert f"PLAINTEXT://0.0.0.0:{container_port}" in env["KAFKA_LISTENERS"].split(",")
    assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://localhost:{host_port}"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"


def test_both_have_the_same_group_and_topic_settings(compose: dict[str, Any]) -> None:
    emulator, kafka = compose["services"]["emulator"], compose["services"]["kafka"]
    options = build_parser().parse_args(["serve", *emulator["command"]])
    delay = emulator["environment"]["REBALANCE_LAB_INITIAL_REBALANCE_DELAY_MS"]
    assert int(delay) == int(kafka["environment"]["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"]) == 0
    assert options.num_partitions == int(kafka["environment"]["KAFKA_NUM_PARTITIONS"])
    assert not options.no_auto_create_topics and kafka["environment"]["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "true"
    _, emulator_port, _ = _published(emulator)
    _, kafka_port, _ = _published(kafka)
    assert emulator_port != kafka_port
