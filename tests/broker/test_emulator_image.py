"""The emulator's own container image (docker/emulator/), run with Testcontainers.

The image is built when missing (``docker/build_images.py --emulator`` on Podman; the same
recipe on the official Python image with a Docker engine; ``REBALANCE_LAB_EMULATOR_IMAGE``
names another one), started with container port 9092 published on a free loopback port P,
and told to advertise ``127.0.0.1:P``. Real kafka-python clients then form a group through it.
Without a container engine, or when the image cannot be built, the broker tests are skipped,
except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient

from rebalance_lab.api import Emulator
from rebalance_lab.cli import build_parser, config_from_args
from tests.support.container_engine import ContainerEngine, EngineUnavailable, container_engine, docker_client
from tests.support.kafka_broker import free_port, is_ci, load_build_script, wait_until_ready

IMAGE_ENV = "REBALANCE_LAB_EMULATOR_IMAGE"
CONTAINER_PREFIX = "rebalance-lab-emulator"
CONTAINER_PORT = 9092
TOPIC = "image-orders"
PARTITIONS = 4
RECORDS = 40
GROUP_TIMEOUT = 60.0


# -- the advertised address, without a container ------------------------------------------


def test_serve_options_set_the_advertised_address() -> None:
    args = build_parser().parse_args(
        ["serve", "--host", "0.0.0.0", "--advertised-host", "kafka.example", "--advertised-port", "39092"]
    )
    config = config_from_args(args)
    assert (config.host, config.port) == ("0.0.0.0", 9092)
    assert (config.advertised_host, config.advertised_port) == ("kafka.example", 39092)
    default = config_from_args(build_parser().parse_args(["serve"]))
    assert (default.advertised_host, default.advertised_port) == (None, None)


async def test_brokers_advertise_the_given_address() -> None:
    async with Emulator(brokers=2, advertised_host="kafka.example", advertised_port=39092) as emulator:
        assert emulator.bootstrap_servers == "kafka.example:39092,kafka.example:39093"
    async with Emulator(brokers=1) as emulator:  # by default, the bound address
        host, port = emulator.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) > 0


# -- the image -----------------------------------------------------------------------------


def _unavailable(reason: str) -> NoReturn:
    if is_ci():
        pytest.fail(f"the emulator image in CI: {reason}", pytrace=False)
    pytest.skip(reason[:2000])


@dataclass
class EmulatorContainer:
    image: str
    bootstrap: str
    port: int
    container: Any
    start_seconds: float

    def logs(self) -> str:
        out, err = self.container.get_logs()
        return (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")


def _docker_build(engine: ContainerEngine) -> str:
    """The recipe on a Docker engine: official Python base, wheels fetched beforehand."""
    build = load_build_script()
    tag = str(build.emulator_image())
    client = docker_client(engine.docker_host, timeout=900)
    try:
        with contextlib.suppress(Exception):
            client.images.get(tag)
            return tag
        with tempfile.TemporaryDirectory(prefix="rebalance-lab-emulator-") as context:
            build.prepare_emulator_context(Path(context))
            client.images.build(
                path=context,
                dockerfile="docker/emulator/Containerfile",
                tag=tag,
                rm=True,
                buildargs={
                    "BASE_IMAGE": build.DOCKER_PYTHON_BASE_IMAGE,
                    "EMULATOR_VERSION": build.project_version(),
                    "PIP_INSTALL_OPTIONS": build.EMULATOR_PIP_OPTIONS,
                },
            )
        return tag
    finally:
        client.close()


def _image(engine: ContainerEngine) -> str:
    override = os.environ.get(IMAGE_ENV, "").strip()
    if override:
        return override
    try:
        if engine.local_images_only:
            return str(load_build_script().build_emulator())
        return _docker_build(engine)
    except Exception as exc:
        _unavailable(f"building the emulator image failed: {exc}")


@pytest.fixture(scope="module")
def engine() -> Iterator[ContainerEngine]:
    cm = container_engine()
    try:
        found = cm.__enter__()
    except EngineUnavailable as exc:
        _unavailable(f"no container engine: {exc}")
    try:
        _remove_orphans(found)
        yield found
    finally:
        cm.__exit__(None, None, None)


def _remove_orphans(engine: ContainerEngine) -> None:
    """Remove emulator containers of test sessions that died (no Ryuk on Podman)."""
    if engine.kind != "podman":
        return
    client = docker_client(engine.docker_host)
    try:
        for container in client.containers.list(all=True, filters={"name": CONTAINER_PREFIX}):
            match = re.fullmatch(rf"{CONTAINER_PREFIX}-(\d+)-\d+", str(container.name))
            if match and not Path(f"/proc/{match.group(1)}").exists():
                with contextlib.suppress(Exception):
                    container.remove(force=True)
    finally:
        client.close()


@pytest.fixture(scope="module")
def emulator_container(engine: ContainerEngine) -> Iterator[EmulatorContainer]:
    from testcontainers.core.container import DockerContainer

    image = _image(engine)
    port = free_port()
    container = DockerContainer(image)
    # Listens on 9092 in the container; clients are told the published address instead.
    container.with_env("REBALANCE_LAB_ADVERTISED_HOST", "127.0.0.1")
    container.with_env("REBALANCE_LAB_ADVERTISED_PORT", str(port))
    container.with_command(["--topic", f"{TOPIC}:{PARTITIONS}", "--min-session-timeout-ms", "1000"])
    container.with_name(f"{CONTAINER_PREFIX}-{os.getpid()}-{port}")
    ports: dict[str, Any] = container.ports  # docker-py also takes (host_ip, port)
    ports[f"{CONTAINER_PORT}/tcp"] = ("127.0.0.1", port)
    bootstrap = f"127.0.0.1:{port}"
    started = time.monotonic()
    try:
        container.start()
        wait_until_ready(bootstrap, 60.0)
    except Exception as exc:
        logs = ""
        with contextlib.suppress(Exception):
            out, err = container.get_logs()
            logs = ((out or b"") + (err or b"")).decode(errors="replace")[-4000:]
        with contextlib.suppress(Exception):
            container.stop()
        _unavailable(f"the emulator image {image} did not start: {exc}\n{logs}")
    running = EmulatorContainer(image, bootstrap, port, container, time.monotonic() - started)
    print(f"\n[emulator image] {image} at {bootstrap}, ready in {running.start_seconds:.2f} s")
    try:
        yield running
    finally:
        container.stop()


@pytest.mark.broker
def test_the_container_advertises_the_published_port(emulator_container: EmulatorContainer) -> None:
    admin: Any = KafkaAdminClient(bootstrap_servers=emulator_container.bootstrap, client_id="image-admin")
    try:
        cluster = admin.describe_cluster()
        topics = admin.list_topics()
    finally:
        admin.close()
    assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [("127.0.0.1", emulator_container.port)]
    assert TOPIC in topics
    assert f"bootstrap servers: 127.0.0.1:{emulator_container.port}" in emulator_container.logs()


class _Members:
    """kafka-python consumers of one group on threads, recording what each holds and reads."""

    def __init__(self, bootstrap: str, group: str, count: int) -> None:
        self.bootstrap, self.group = bootstrap, group
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.assignments: dict[int, set[int]] = {i: set() for i in range(count)}
        self.received: dict[bytes, bytes] = {}
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._member, args=(i,), daemon=True) for i in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def snapshot(self) -> tuple[dict[int, set[int]], int]:
        with self.lock:
            return {i: set(a) for i, a in self.assignments.items()}, len(self.received)

    def _member(self, index: int) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=f"image-member-{index}",
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        try:
            # Join with the topic's partitions known (see test_real_broker_smoke.py).
            deadline = time.monotonic() + 30
            while not consumer.partitions_for_topic(TOPIC) and time.monotonic() < deadline:
                time.sleep(0.05)
            consumer.subscribe([TOPIC])
            while not self.stop.is_set():
                batches = consumer.poll(timeout_ms=1000)
                with self.lock:
                    for records in batches.values():
                        for record in records:
                            self.received[record.key] = record.value
                    self.assignments[index] = {tp.partition for tp in consumer.assignment()}
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            consumer.close()


@pytest.mark.broker
def test_two_consumers_form_a_group_through_the_container(emulator_container: EmulatorContainer) -> None:
    bootstrap = emulator_container.bootstrap
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(RECORDS)}
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for key, value in sent.items():
            producer.send(TOPIC, key=key, value=value)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)

    group = f"image-group-{uuid.uuid4().hex[:8]}"
    members = _Members(bootstrap, group, 2)
    started = time.monotonic()
    members.start()
    final: dict[int, set[int]] = {}
    description: dict[str, Any] = {}
    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="image-admin")
    try:
        # Formed: each member holds partitions, none twice, every record was read, and the
        # coordinator says the group is Stable with two members.
        while time.monotonic() - started < GROUP_TIMEOUT and not members.errors:
            final, count = members.snapshot()
            if count == len(sent) and all(final.values()) and not final[0] & final[1]:
                description = admin.describe_groups([group])[group]
                if description["group_state"] == "Stable" and len(description["members"]) == 2:
                    break
            time.sleep(0.1)
        formed_after = time.monotonic() - started
    finally:
        admin.close()
        members.close()
    print(f"\n[emulator image] group of 2 formed and read {len(members.received)} records in {formed_after:.1f} s")
    assert not members.errors, members.errors
    assert final[0] and final[1] and not final[0] & final[1], final
    assert final[0] | final[1] == set(range(PARTITIONS)), final
    assert members.received == sent
    assert description["group_state"] == "Stable", description
    assert len(description["members"]) == 2
