"""A container engine for Testcontainers: a reachable Docker engine, or Podman started here.

The project's machines (developers' and CI) have no Docker engine and reach no container
registry, but Podman from Debian's packages runs containers and serves the Docker API that
testcontainers-python talks to (spec/container-engine.md). :func:`start_container_engine`

1. uses a Docker engine when one answers ``/_ping`` (``DOCKER_HOST``, else
   ``/var/run/docker.sock``);
2. otherwise installs Podman when it is missing (``apt-get install -y podman runc
   debootstrap``), points ``CONTAINERS_CONF`` at the project's ``docker/podman/containers.conf``
   (runc, cgroupfs, no default ulimits), starts ``podman system service --time=0`` on a socket
   in a private temporary folder, and sets ``DOCKER_HOST``, ``TESTCONTAINERS_RYUK_DISABLED``,
   ``TESTCONTAINERS_CONNECTION_MODE`` and ``TESTCONTAINERS_HOST_OVERRIDE`` for Testcontainers.

:meth:`ContainerEngine.stop` stops the service it started (by its process id) and restores
the environment. Run as a script it starts the engine, prints it and stops it again.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = REPO_ROOT / "docker" / "podman" / "containers.conf"
APT_PACKAGES = ("podman", "runc", "debootstrap")
DOCKER_SOCKET = "/var/run/docker.sock"

EngineKind = Literal["docker", "podman"]


class EngineUnavailable(RuntimeError):
    """No container engine could be found or started."""


def _log(message: str) -> None:
    print(f"[container_engine] {message}", file=sys.stderr, flush=True)


def docker_client(docker_host: str, timeout: float = 30.0) -> Any:
    """A Docker SDK client (``docker.DockerClient``) for ``docker_host``."""
    # The Docker SDK (a dependency of testcontainers), imported by name: the repository's own
    # docker/ folder would shadow it for a type checker run from the repository root.
    docker: Any = importlib.import_module("docker")
    return docker.DockerClient(base_url=docker_host, timeout=timeout)


def ping_error(docker_host: str, timeout: float = 3.0) -> str | None:
    """None when the Docker API at ``docker_host`` answers ``/_ping``, else why not."""
    try:
        client = docker_client(docker_host, timeout)
        try:
            return None if client.ping() else "no OK from /_ping"
        finally:
            client.close()
    except Exception as exc:
        return repr(exc)


def ping(docker_host: str, timeout: float = 3.0) -> bool:
    """Whether the Docker API at ``docker_host`` answers ``/_ping``."""
    return ping_error(docker_host, timeout) is None


def engine_kind(docker_host: str) -> EngineKind:
    """``podman`` when the Docker API at ``docker_host`` is served by Podman, else ``docker``."""
    client = docker_client(docker_host, 10.0)
    try:
        version = client.version()
    finally:
        client.close()
    names = " ".join(str(c.get("Name", "")) for c in version.get("Components") or [])
    return "podman" if "podman" in names.lower() else "docker"


def find_docker_engine() -> str | None:
    """The address of a Docker API that answers, from DOCKER_HOST or the default socket."""
    candidates: list[str] = []
    if os.environ.get("DOCKER_HOST"):
        candidates.append(os.environ["DOCKER_HOST"])
    if Path(DOCKER_SOCKET).exists():
        candidates.append(f"unix://{DOCKER_SOCKET}")
    for docker_host in candidates:
        if ping(docker_host):
            return docker_host
    return None


def _missing_packages() -> list[str]:
    return [p for p in APT_PACKAGES if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]


def ensure_podman_installed() -> None:
    """Install Podman (with runc and debootstrap) from Debian's packages when missing."""
    missing = _missing_packages()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise EngineUnavailable(
            f"no Docker engine, and {', '.join(missing)} missing: run apt-get install -y {' '.join(APT_PACKAGES)}"
        )
    _log(f"installing {' '.join(APT_PACKAGES)} (missing: {', '.join(missing)})")
    started = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_PACKAGES],
    ):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise EngineUnavailable(f"{' '.join(cmd)} failed:\n{proc.stdout[-5000:]}")
    _log(f"installed in {time.monotonic() - started:.1f} s")


@dataclass
class ContainerEngine:
    """A Docker API that Testcontainers can use, and what was started or set to have it."""

    kind: EngineKind
    docker_host: str
    process: subprocess.Popen[bytes] | None = None
    runtime_dir: Path | None = None
    saved_env: dict[str, str | None] = field(default_factory=dict)
    saved_tc_config: dict[str, Any] = field(default_factory=dict)

    @property
    def started_here(self) -> bool:
        return self.process is not None

    @property
    def local_images_only(self) -> bool:
        """Podman here reaches no registry: images must be the ones built by docker/build_images.py."""
        return self.kind == "podman"

    def set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def configure_testcontainers(self) -> None:
        """Apply the Podman settings to testcontainers' configuration object too.

        testcontainers reads TESTCONTAINERS_HOST_OVERRIDE and TESTCONTAINERS_CONNECTION_MODE
        when it is first imported, so setting the environment later is not enough.
        """
        if self.kind != "podman":
            return
        from testcontainers.core.config import ConnectionMode, testcontainers_config

        wanted: dict[str, Any] = {
            "ryuk_disabled": True,
            "tc_host_override": "127.0.0.1",
            "connection_mode_override": ConnectionMode.docker_host,
        }
        for name, value in wanted.items():
            self.saved_tc_config.setdefault(name, getattr(testcontainers_config, name))
            setattr(testcontainers_config, name, value)

    def stop(self) -> None:
        """Stop the Podman service started here (by its pid) and restore the environment."""
        if self.process is not None:
            _log(f"stopping podman system service (pid {self.process.pid})")
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
            self.process = None
        if self.runtime_dir is not None:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
            self.runtime_dir = None
        for key, value in self.saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.saved_env.clear()
        if self.saved_tc_config:
            from testcontainers.core.config import testcontainers_config

            for name, value in self.saved_tc_config.items():
                setattr(testcontainers_config, name, value)
            self.saved_tc_config.clear()


def start_podman_service(timeout: float = 60.0) -> ContainerEngine:
    """Install Podman if needed and serve its Docker API on a socket of our own."""
    ensure_podman_installed()
    runtime_dir = Path(tempfile.mkdtemp(prefix="rebalance-lab-podman-"))
    socket = runtime_dir / "podman.sock"
    docker_host = f"unix://{socket}"
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    log_file = (runtime_dir / "service.log").open("wb")
    started = time.monotonic()
    process = subprocess.Popen(
        ["podman", "system", "service", "--time=0", docker_host],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    log_file.close()
    engine = ContainerEngine("podman", docker_host, process=process, runtime_dir=runtime_dir)
    try:
        last_error: str | None = "no socket yet"
        while True:
            if socket.exists():
                last_error = ping_error(docker_host, timeout=2.0)
                if last_error is None:
                    break
            if process.poll() is not None:
                raise EngineUnavailable(
                    f"podman system service exited with {process.returncode}:\n"
                    + (runtime_dir / "service.log").read_text(errors="replace")[-5000:]
                )
            if time.monotonic() - started > timeout:
                raise EngineUnavailable(
                    f"podman system service did not answer on {socket} in {timeout:.0f} s ({last_error}):\n"
                    + (runtime_dir / "service.log").read_text(errors="replace")[-5000:]
                )
            time.sleep(0.1)
    except BaseException:
        engine.stop()
        raise
    _log(f"podman system service (pid {process.pid}) answers on {docker_host} after {time.monotonic() - started:.1f} s")
    engine.set_env(
        {
            "CONTAINERS_CONF": str(CONTAINERS_CONF),
            "DOCKER_HOST": docker_host,
            "TESTCONTAINERS_RYUK_DISABLED": "true",  # the reaper image cannot be pulled
            "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
            "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
        }
    )
    return engine


def start_container_engine() -> ContainerEngine:
    """A reachable Docker engine if there is one, else a Podman service started here."""
    docker_host = find_docker_engine()
    if docker_host is not None:
        kind = engine_kind(docker_host)
        _log(f"using the {kind} engine at {docker_host}")
        engine = ContainerEngine(kind, docker_host)
        engine.set_env({"DOCKER_HOST": docker_host})
        if kind == "podman":
            engine.set_env(
                {
                    "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(CONTAINERS_CONF)),
                    "TESTCONTAINERS_RYUK_DISABLED": "true",
                    "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
                    "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
                }
            )
        return engine
    return start_podman_service()


@contextlib.contextmanager
def container_engine() -> Iterator[ContainerEngine]:
    engine = start_container_engine()
    try:
        engine.configure_testcontainers()
        yield engine
    finally:
        engine.stop()


if __name__ == "__main__":
    with container_engine() as found:
        print(f"{found.kind} at {found.docker_host} (started here: {found.started_here})")
