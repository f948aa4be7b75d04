"""Fixtures of the real-client tests: the ``target`` they run against and their member processes.

``target`` is parametrized over the registry ``TARGETS``. Each entry names a flavor and a
factory: a context manager that, given the pytest request, yields a
:class:`tests.clients.target.Target`. The tests only use ``target.bootstrap_servers``,
``target.flavor`` and ``target.observer`` (Kafka protocol only), plus the optional
emulator-only extras ``target.emulator`` / ``target.generation_snapshots``, which are
``None`` on a real broker. Every test uses fresh topic and group names, so a target can
be shared by a whole session.

The same tests run against the real Kafka 4.4.0 and 3.9.2 brokers of ``tests/conftest.py``
(targets ``real-kafka-4`` / ``real-kafka-3``, marked ``broker``), started with
``group.initial.rebalance.delay.ms=0`` and ``group.min.session.timeout.ms=1000`` like the
emulator targets, so a test written against the emulator means the same thing on Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from rebalance_lab.api import Emulator
from tests.clients.harness import CLIENTS, Members
from tests.clients.target import GroupObserver, Target

TargetFactory = Callable[[pytest.FixtureRequest], AbstractContextManager[Target]]


@dataclass(frozen=True)
class TargetKind:
    name: str
    flavor: str
    factory: TargetFactory
    marks: tuple[pytest.MarkDecorator, ...]


TARGETS: dict[str, TargetKind] = {}


def register(name: str, flavor: str, factory: TargetFactory, *marks: pytest.MarkDecorator) -> None:
    TARGETS[name] = TargetKind(name, flavor, factory, marks)


@contextmanager
def observed(name: str, bootstrap_servers: str, flavor: str, emulator: Emulator | None = None,
             recording: Path | None = None) -> Iterator[Target]:
    """A Target on ``bootstrap_servers`` with its protocol-level observer (closed afterwards)."""
    observer = GroupObserver(bootstrap_servers)
    try:
        yield Target(name, bootstrap_servers, flavor, observer, emulator, recording)
    finally:
        observer.close()


@contextmanager
def emulator_target(flavor: str, request: pytest.FixtureRequest) -> Iterator[Target]:
    """A fresh in-process emulator per test, recording its group records to the test's tmp dir."""
    tmp_path: Path = request.getfixturevalue("tmp_path")
    recording = tmp_path / "emulator-record.jsonl"
    with Emulator(flavor=flavor, initial_rebalance_delay_ms=0, min_session_timeout_ms=1000,
                  record_path=str(recording)) as emulator, \
            observed(f"emulator-{flavor}", emulator.bootstrap_servers, flavor,
                     emulator=emulator, recording=recording) as target:
        yield target


@contextmanager
def real_broker(flavor: str, request: pytest.FixtureRequest) -> Iterator[Target]:
    """The session's real Kafka broker of that release line (tests/conftest.py), same settings as the emulator."""
    broker = request.getfixturevalue("kafka_brokers").get(
        flavor.removeprefix("kafka-"), {"group.min.session.timeout.ms": 1000})
    with observed(f"real-{flavor}", broker.bootstrap, flavor) as target:
        yield target


register("emulator-kafka-4", "kafka-4", partial(emulator_target, "kafka-4"))
register("emulator-kafka-3", "kafka-3", partial(emulator_target, "kafka-3"))
register("real-kafka-4", "kafka-4", partial(real_broker, "kafka-4"), pytest.mark.broker)
register("real-kafka-3", "kafka-3", partial(real_broker, "kafka-3"), pytest.mark.broker)


@pytest.fixture(params=[pytest.param(name, id=name, marks=kind.marks) for name, kind in TARGETS.items()])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    with TARGETS[request.param].factory(request) as made:
        yield made


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def members(target: Target, tmp_path: Path) -> Iterator[Members]:
    """Starts member processes; every one still running is killed when the test ends."""
    started = Members(target, tmp_path)
    try:
        yield started
    finally:
        started.dispose()
