"""Session fixtures shared by every test folder: real Apache Kafka brokers (Testcontainers).

``kafka_broker_4`` / ``kafka_broker_3`` are the session's brokers of each release line with
the default settings (tests/support/kafka_broker.py: no initial rebalance delay, one
``__consumer_offsets`` partition); ``kafka_broker`` runs a test once per flavor; a test that
needs other broker settings asks ``kafka_brokers.get("4", {"group.min.session.timeout.ms":
1000})`` for a broker of its own (kept for the session and shared with tests asking the same).

Without a container engine or when the image cannot be built the tests are skipped, except
in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # "tests.support" is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))

from tests.support.kafka_broker import (  # noqa: E402
    FLAVORS,
    BrokerPool,
    BrokerUnavailable,
    KafkaBroker,
    is_ci,
)

_pools: list[BrokerPool] = []


class Brokers:
    """The session's broker pool, turning "unavailable" into a skip (a failure in CI)."""

    def __init__(self, pool: BrokerPool) -> None:
        self._pool = pool

    def get(self, flavor: str, settings: dict[str, str | int | bool] | None = None) -> KafkaBroker:
        try:
            return self._pool.get(flavor, settings)
        except BrokerUnavailable as exc:
            if is_ci():
                pytest.fail(f"no Kafka broker (flavor {flavor}) in CI: {exc}", pytrace=False)
            pytest.skip(f"no Kafka broker (flavor {flavor}): {str(exc)[:2000]}")


@pytest.fixture(scope="session")
def kafka_brokers() -> Iterator[Brokers]:
    pool = BrokerPool()
    _pools.append(pool)
    try:
        yield Brokers(pool)
    finally:
        pool.close()


@pytest.fixture(scope="session")
def kafka_broker_4(kafka_brokers: Brokers) -> KafkaBroker:
    """The latest Apache Kafka 4.x (new Java group coordinator)."""
    return kafka_brokers.get("4")


@pytest.fixture(scope="session")
def kafka_broker_3(kafka_brokers: Brokers) -> KafkaBroker:
    """The latest Apache Kafka 3.9.x (Scala group coordinator)."""
    return kafka_brokers.get("3")


@pytest.fixture(scope="session", params=FLAVORS, ids=[f"kafka{f}" for f in FLAVORS])
def kafka_broker(request: pytest.FixtureRequest, kafka_brokers: Brokers) -> KafkaBroker:
    """Each release line in turn (the emulator's flavors "4" and "3")."""
    return kafka_brokers.get(str(request.param))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    started = [broker for pool in _pools for broker in pool.started]
    if started:
        terminalreporter.section("real Kafka brokers")
        for broker in started:
            terminalreporter.write_line(broker.describe())
