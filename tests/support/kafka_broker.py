"""Real Apache Kafka brokers for the tests, through Testcontainers.

A broker is one of the two release lines the emulator's flavors follow (``"4"``: the latest
4.x with the new Java group coordinator; ``"3"``: the latest 3.9.x with the Scala one), in
KRaft mode, one node that is its own controller. Where it comes from:

* ``REBALANCE_LAB_KAFKA_BOOTSTRAP`` (4.x) / ``REBALANCE_LAB_KAFKA3_BOOTSTRAP`` (3.9.x) name an
  existing broker: it is used as it is (its settings are the operator's);
* with a Docker engine, the official ``apache/kafka:<version>`` image;
* otherwise Podman (started by :mod:`tests.support.container_engine`) and the image built
  locally by ``docker/build_images.py``;
* ``REBALANCE_LAB_KAFKA_IMAGE`` / ``REBALANCE_LAB_KAFKA3_IMAGE`` name another image to run
  (one that takes the official image's ``KAFKA_*`` environment) with either engine.

Both images take broker properties from the same environment (``KAFKA_<NAME>``, the
official image's convention, see ``docker/kafka/start-kafka.sh``). The broker advertises
``127.0.0.1:<port>`` where ``<port>`` is a free host port mapped 1:1 to the same port in the
container, so the address the broker hands to clients is the one they connect to. A broker
is ready when kafka-python's admin client gets the cluster metadata and a group coordinator
(so ``__consumer_offsets`` exists before the first test).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from tests.support.container_engine import ContainerEngine, EngineUnavailable, container_engine, docker_client

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "docker" / "build_images.py"

FLAVORS = ("4", "3")
EXTERNAL_BOOTSTRAP_ENV = {"4": "REBALANCE_LAB_KAFKA_BOOTSTRAP", "3": "REBALANCE_LAB_KAFKA3_BOOTSTRAP"}
READINESS_GROUP = "rebalance-lab-readiness"
EXTERNAL_READY_TIMEOUT = 60.0
# An image to run instead of the official (Docker) or locally built (Podman) one.
IMAGE_ENV = {"4": "REBALANCE_LAB_KAFKA_IMAGE", "3": "REBALANCE_LAB_KAFKA3_IMAGE"}

# Broker settings of a test session unless a test asks for others: a fast start, one
# replica of everything, and no initial rebalance delay.
DEFAULT_SETTINGS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
}
FLAVOR_SETTINGS: dict[str, dict[str, str]] = {
    "4": {
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
    },
    "3": {},
}
# Container names: <prefix><flavor>-<pid of the test session>-<port>.
CONTAINER_PREFIX = "rebalance-lab-kafka"
# Listener layout inside the container; the PLAINTEXT port is chosen per broker.
CONTROLLER_PORT = 9093
JVM_HEAP = "-Xms128m -Xmx512m"

BrokerSource = Literal["external", "docker", "podman"]
SettingValue = str | int | bool


class BrokerUnavailable(RuntimeError):
    """No broker of the asked flavor could be had (no engine, no image, did not start)."""


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def load_build_script() -> ModuleType:
    """docker/build_images.py as a module (it is a script, not part of a package)."""
    name = "rebalance_lab_build_images"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BUILD_SCRIPT)
    if spec is None or spec.loader is None:
        raise BrokerUnavailable(f"cannot load {BUILD_SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kafka_version(flavor: str) -> str:
    return str(load_build_script().KAFKA_RELEASES[flavor].version)


def normalize_settings(flavor: str, settings: Mapping[str, SettingValue] | None) -> dict[str, str]:
    merged = {**DEFAULT_SETTINGS, **FLAVOR_SETTINGS[flavor]}
    for key, value in (settings or {}).items():
        merged[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return merged


def property_env_name(prop: str) -> str:
    """``group.initial.rebalance.delay.ms`` -> ``KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS``.

    The official apache/kafka image's convention: "." -> "_", "_" -> "__", "-" -> "___".
    """
    return "KAFKA_" + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def broker_environment(port: int, settings: Mapping[str, str]) -> dict[str, str]:
    """The container's environment: a combined broker+controller advertising 127.0.0.1:port."""
    props = {
        "node.id": "1",
        "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://127.0.0.1:{CONTROLLER_PORT}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"1@127.0.0.1:{CONTROLLER_PORT}",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": "/tmp/kraft-combined-logs",
        **settings,
    }
    env = {property_env_name(k): v for k, v in props.items()}
    env["CLUSTER_ID"] = "5L6g3nShT-eMCtK--X86sw"
    env["KAFKA_HEAP_OPTS"] = JVM_HEAP
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_ready(bootstrap: str, timeout: float, alive: Callable[[], bool] | None = None) -> None:
    """Block until kafka-python gets metadata and a group coordinator from ``bootstrap``."""
    from kafka.admin import KafkaAdminClient

    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise BrokerUnavailable(f"the broker at {bootstrap} exited while starting (last error: {last_error})")
        admin: Any = None
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=bootstrap,
                client_id="rebalance-lab-readiness",
                request_timeout_ms=5000,
                bootstrap_timeout_ms=5000,
            )
            admin.list_topics()
            # describe_groups finds the group coordinator first, which fails (raises) until
            # __consumer_offsets is ready. The group does not exist: 3.9 answers state
            # "Dead" without error, 4.x GROUP_ID_NOT_FOUND; both mean the coordinator is up.
            groups = admin.describe_groups([READINESS_GROUP])
            error = groups.get(READINESS_GROUP, {}).get("error", "no answer for the group")
            if error is None or "Coordinator" not in str(error):
                return
            last_error = RuntimeError(f"DescribeGroups: {error}")
        except Exception as exc:  # not up yet: connection refused, coordinator not available...
            last_error = exc
        finally:
            if admin is not None:
                with contextlib.suppress(Exception):
                    admin.close()
        time.sleep(0.25)
    raise BrokerUnavailable(f"the broker at {bootstrap} was not ready in {timeout:.0f} s: {last_error!r}")


@dataclass
class KafkaBroker:
    """A running broker: where to connect, what it is, and how long it took to be ready."""

    flavor: str
    bootstrap: str
    source: BrokerSource
    version: str | None
    image: str | None = None
    start_seconds: float = 0.0
    settings: dict[str, str] = field(default_factory=dict)
    container: Any = field(default=None, repr=False)

    @property
    def bootstrap_servers(self) -> list[str]:
        return [self.bootstrap]

    def logs(self) -> str:
        if self.container is None:
            return ""
        out, err = self.container.get_logs()
        return (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")

    def describe(self) -> str:
        what = f"Kafka {self.version or '?'} (flavor {self.flavor}, {self.source}"
        what += f", {self.image})" if self.image else ")"
        return f"{what} at {self.bootstrap}, ready in {self.start_seconds:.1f} s"

    def stop(self) -> None:
        if self.container is not None:
            container, self.container = self.container, None
            container.stop()


def _container_alive(container: Any) -> Callable[[], bool]:
    def alive() -> bool:
        try:
            wrapped = container.get_wrapped_container()
            wrapped.reload()
            return str(wrapped.status) not in ("exited", "dead")
        except Exception:
            return False

    return alive


def start_container_broker(
    engine: ContainerEngine, flavor: str, settings: Mapping[str, str], *, timeout: float = 180.0
) -> KafkaBroker:
    """Start a broker container of ``flavor`` on ``engine`` and wait until it is ready."""
    from testcontainers.core.container import DockerContainer

    build = load_build_script()
    release = build.KAFKA_RELEASES[flavor]
    override = os.environ.get(IMAGE_ENV[flavor], "").strip()
    if override:
        image = override
    elif engine.local_images_only:
        try:
            image = str(build.build([flavor])[flavor])
        except Exception as exc:
            raise BrokerUnavailable(f"building the Kafka {release.version} image failed: {exc}") from exc
    else:
        image = str(release.official_image)
    port = free_port()
    container = DockerContainer(image)
    for key, value in broker_environment(port, settings).items():
        container.with_env(key, value)
    container.with_name(f"{CONTAINER_PREFIX}{flavor}-{os.getpid()}-{port}")
    host = container.get_docker_client().host()
    local = host in ("localhost", "127.0.0.1", "::1")
    # Published on the host's loopback only, same port number as inside the container.
    ports: dict[str, Any] = container.ports  # docker-py also takes (host_ip, port)
    ports[f"{port}/tcp"] = ("127.0.0.1", port) if local else port
    bootstrap = f"{'127.0.0.1' if local else host}:{port}"
    broker = KafkaBroker(flavor, bootstrap, engine.kind, release.version, image, 0.0, dict(settings), container)
    started = time.monotonic()
    try:
        container.start()
        wait_until_ready(bootstrap, timeout, _container_alive(container))
    except Exception as exc:
        logs = ""
        with contextlib.suppress(Exception):
            logs = broker.logs()[-4000:]
        broker.stop()
        raise BrokerUnavailable(f"Kafka {release.version} on {engine.kind}: {exc}\n{logs}") from exc
    except BaseException:
        broker.stop()
        raise
    broker.start_seconds = time.monotonic() - started
    return broker


def remove_orphan_containers(engine: ContainerEngine) -> None:
    """Remove broker containers left by test sessions that died (there is no Ryuk on Podman).

    Their names carry the process id of the session that started them
    (``rebalance-lab-kafka<flavor>-<pid>-<port>``); only those whose process is gone go.
    """
    if engine.kind != "podman":
        return
    client = docker_client(engine.docker_host)
    try:
        for container in client.containers.list(all=True, filters={"name": CONTAINER_PREFIX}):
            match = re.fullmatch(rf"{CONTAINER_PREFIX}\d-(\d+)-\d+", str(container.name))
            if match and not Path(f"/proc/{match.group(1)}").exists():
                print(f"[kafka_broker] removing the orphan container {container.name}", file=sys.stderr)
                with contextlib.suppress(Exception):
                    container.remove(force=True)
    finally:
        client.close()


class BrokerPool:
    """The brokers of a test session, one per (flavor, settings), started on first use.

    The container engine is found or started on first need and stopped by :meth:`close`,
    after every broker container has been removed.
    """

    def __init__(self) -> None:
        self._brokers: dict[tuple[str, tuple[tuple[str, str], ...]], KafkaBroker] = {}
        self._failures: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
        self._engine_cm: Any = None
        self._engine: ContainerEngine | None = None
        self._engine_error: str | None = None
        self.started: list[KafkaBroker] = []

    def engine(self) -> ContainerEngine:
        if self._engine_error is not None:
            raise BrokerUnavailable(self._engine_error)
        if self._engine is None:
            cm = container_engine()
            try:
                self._engine = cm.__enter__()
            except EngineUnavailable as exc:
                self._engine_error = f"no container engine: {exc}"
                raise BrokerUnavailable(self._engine_error) from exc
            self._engine_cm = cm
            remove_orphan_containers(self._engine)
        return self._engine

    def get(self, flavor: str, settings: Mapping[str, SettingValue] | None = None) -> KafkaBroker:
        if flavor not in FLAVORS:
            raise ValueError(f"unknown flavor {flavor!r}; known: {FLAVORS}")
        external = os.environ.get(EXTERNAL_BOOTSTRAP_ENV[flavor], "").strip()
        if external:
            if settings:
                raise BrokerUnavailable(
                    f"{EXTERNAL_BOOTSTRAP_ENV[flavor]} names an existing broker; its settings cannot be {settings}"
                )
            key_external = (flavor, (("external", external),))
            if key_external not in self._brokers:
                started = time.monotonic()
                wait_until_ready(external, EXTERNAL_READY_TIMEOUT)
                broker = KafkaBroker(flavor, external, "external", None, None, time.monotonic() - started)
                self._brokers[key_external] = broker
                self.started.append(broker)
            return self._brokers[key_external]
        wanted = normalize_settings(flavor, settings)
        key = (flavor, tuple(sorted(wanted.items())))
        if key in self._failures:
            raise BrokerUnavailable(self._failures[key])
        if key not in self._brokers:
            try:
                broker = start_container_broker(self.engine(), flavor, wanted)
            except BrokerUnavailable as exc:
                self._failures[key] = str(exc)
                raise
            print(f"\n[kafka_broker] {broker.describe()}", file=sys.stderr, flush=True)
            self._brokers[key] = broker
            self.started.append(broker)
        return self._brokers[key]

    def close(self) -> None:
        for broker in self._brokers.values():
            try:
                broker.stop()
            except Exception as exc:
                print(f"[kafka_broker] stopping {broker.describe()} failed: {exc}", file=sys.stderr)
        self._brokers.clear()
        if self._engine_cm is not None:
            cm, self._engine_cm, self._engine = self._engine_cm, None, None
            cm.__exit__(None, None, None)
