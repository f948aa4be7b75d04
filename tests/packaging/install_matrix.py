"""Environments that already hold a user's Kafka clients, for installing the built wheel into (issue 21).

Each environment is a venv under ``~/.cache/rebalance-lab/install-matrix`` holding one pinned set of clients
(kafka-python 2.0.x, 2.3.x or 3.0.x, each with an aiokafka and a confluent-kafka that go with it) and pytest,
as a user's project would. The venv is made once and reused by later runs (pip's cache too): before each
run whatever a previous run added is removed again, so the wheel always meets the environment as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rebalance-lab" / "install-matrix"
WHEELHOUSE = CACHE / "wheelhouse"  # rebalance-lab's dependencies as PyPI serves them, downloaded once


@dataclass(frozen=True)
class ClientSet:
    name: str
    pins: tuple[str, ...]

    @property
    def kafka_python(self) -> str:
        return next(p for p in self.pins if p.startswith("kafka-python==")).split("==")[1]


# aiokafka and confluent-kafka releases of each kafka-python line's time (none of them needs kafka-python).
CLIENT_SETS = (
    ClientSet("kafka-python-2.0", ("kafka-python==2.0.6", "aiokafka==0.11.0", "confluent-kafka==2.6.1",
                                   "pytest==8.3.5")),
    ClientSet("kafka-python-2.3", ("kafka-python==2.3.3", "aiokafka==0.12.0", "confluent-kafka==2.11.1",
                                   "pytest==8.4.2")),
    ClientSet("kafka-python-3.0", ("kafka-python==3.0.12", "aiokafka==0.14.0", "confluent-kafka==2.16.1",
                                   "pytest==9.2.0")),
)


def _run(args: list[str], timeout: int = 600) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


@dataclass(frozen=True)
class Env:
    clients: ClientSet
    root: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def pip(self, *args: str) -> str:
        return _run([self.python, "-m", "pip", "--disable-pip-version-check", *args])

    def freeze(self) -> set[str]:
        return {line.strip() for line in self.pip("freeze", "--all").splitlines() if line.strip()}

    @property
    def _base_file(self) -> Path:
        return self.root / "base-freeze.txt"

    def base(self) -> set[str]:
        return set(self._base_file.read_text().split())


def prepared(clients: ClientSet) -> Env:
    """The client set's venv as it was made: created and filled on first use, then restored each time."""
    key = hashlib.sha256("\n".join((sys.version, *clients.pins)).encode()).hexdigest()[:12]
    env = Env(clients, CACHE / f"{clients.name}-{key}")
    if not env._base_file.exists():
        _run([sys.executable, "-m", "venv", "--clear", str(env.root)])
        env.pip("install", "--quiet", *clients.pins)
        env._base_file.write_text("\n".join(sorted(env.freeze())) + "\n")
    _restore(env)
    return env


def install(env: Env, wheel: Path) -> None:
    """``pip install`` of the wheel; its dependencies come from the wheelhouse, filled from PyPI when short."""
    local = ("install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE), str(wheel))
    try:
        env.pip(*local)
    except RuntimeError:  # a dependency not downloaded yet (the first run, or a new pin)
        env.pip("download", "--quiet", "--dest", str(WHEELHOUSE), str(wheel))
        env.pip(*local)


def _restore(env: Env) -> None:
    """Remove what a previous run installed (rebalance-lab and its dependencies) so the venv is as made."""
    base = env.base()
    added = sorted(line.split("==")[0].split(" @ ")[0] for line in env.freeze() - base)
    if added:
        env.pip("uninstall", "--yes", "--quiet", *added)
    if env.freeze() != base:  # an install changed a package the environment had: make it anew next time
        env._base_file.unlink()
        raise RuntimeError(f"{env.root} differs from its recorded state; it will be made anew on the next run")
