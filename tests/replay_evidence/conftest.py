"""The evidence of a scripted history on each real broker of the session, captured once (issue 20 item 1).

``evidence["4"]`` / ``evidence["3"]``: the scenario of :mod:`tests.replay_evidence.scenario` run by
real kafka-python consumers on the session's Kafka 4.4.0 / 3.9.2 broker (tests/conftest.py), with the
broker's server.log (at the levels its distribution ships: INFO), the ``__consumer_offsets`` dump and
the clients' own record. About a minute per broker; brokers that cannot start fail in CI.

``java_evidence``: a group led by a real Java consumer (kafka-clients 4.4.0, its log at INFO) while
kafka-python members join and leave, on the 4.4.0 broker: the Java client log, the broker's log and the
kafka-python members' records. About 20 s.

``kip848_evidence``: a KIP-848 (``consumer`` protocol) group of confluent-kafka consumers on a 4.4.0 broker
(:mod:`tests.replay_evidence.kip848`): its server.log at INFO, the offsets dump and the clients' settled views.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Brokers
from tests.replay_evidence.capture import Evidence, _create_topic, broker_lines, capture
from tests.replay_evidence.java_client import JavaHistory, run_java_history
from tests.replay_evidence.kip848 import History
from tests.replay_evidence.scenario import ScenarioError


class Captures:
    def __init__(self, brokers: Brokers, root: Path) -> None:
        self._brokers = brokers
        self._root = root
        self._done: dict[str, tuple[Evidence, dict[str, Path]]] = {}

    def get(self, flavor: str) -> tuple[Evidence, dict[str, Path]]:
        if flavor not in self._done:
            try:
                evidence = capture(self._brokers.get(flavor), flavor)
            except ScenarioError as exc:
                # The history is made by real kafka-python processes; now and then one of them stops
                # heartbeating mid-scenario (once in this session's three runs, on 3.9.2: a leader expired after
                # leading a generation, and its group never settled). That is the client's, not the replay's: the
                # history is made again, once, in a fresh group, and the first attempt is said on stderr.
                print(f"replay evidence on Kafka {flavor}: the scenario's clients did not settle, made again: "
                      f"{str(exc)[:300]}", file=sys.stderr)
                evidence = capture(self._brokers.get(flavor), flavor)
            self._done[flavor] = (evidence, evidence.write(self._root / f"kafka-{flavor}"))
        return self._done[flavor]


@pytest.fixture(scope="session")
def evidence(kafka_brokers: Brokers, tmp_path_factory: pytest.TempPathFactory) -> Captures:
    return Captures(kafka_brokers, tmp_path_factory.mktemp("replay-evidence"))


@pytest.fixture(scope="session")
def java_evidence(kafka_brokers: Brokers, tmp_path_factory: pytest.TempPathFactory) -> tuple[JavaHistory, Path]:
    """(the history, the broker's server.log) of :func:`tests.replay_evidence.java_client.run_java_history`."""
    import uuid

    broker = kafka_brokers.get("4")
    out = tmp_path_factory.mktemp("java-evidence")
    suffix = uuid.uuid4().hex[:8]
    topic = f"evidence-{suffix}"
    _create_topic(broker.bootstrap, topic)
    history = run_java_history(broker.bootstrap, f"evidence-java-{suffix}", topic, out / "client.log")
    server_log = out / "server.log"
    server_log.write_text(broker_lines(broker.logs()))
    return history, server_log


@pytest.fixture(scope="session")
def kip848_evidence(kafka_brokers: Brokers, tmp_path_factory: pytest.TempPathFactory) -> History:
    """A KIP-848 group's history on the 4.4.0 broker that tests/broker/test_kip848_replay.py uses (1 s
    heartbeats): :mod:`tests.replay_evidence.kip848`. About 30 s."""
    from tests.replay_evidence import kip848
    from tests.support.kip848_capture import SETTINGS

    broker = kafka_brokers.get("4", SETTINGS)
    if broker.source == "external":
        pytest.skip("an existing broker has its operator's settings and logs")
    return kip848.run(broker, tmp_path_factory.mktemp("kip848-evidence"))
