"""The KIP-848 client matrix: real clients with ``group.protocol=consumer`` in a 3-member group.

The scenario of ``test_client_matrix.py`` (join, ``a`` leaves, ``b`` is SIGKILLed, every record
consumed), for every matrix client whose pinned release speaks the consumer protocol, against the
emulator (flavor kafka-4) and a real Kafka 4.4.0 broker. The differences from the classic run:

* the broker assigns: members name a server assignor (``uniform``); there is no JoinGroup/SyncGroup;
* the session timeout and heartbeat interval are the broker's (``group.consumer.*``), not the
  client's, so both targets run with the lowered settings of ``GROUP_SETTINGS`` (6 s session,
  500 ms heartbeats) and a SIGKILLed member is fenced after 6 s instead of Kafka's default 45 s;
* the group is watched through the protocol (ConsumerGroupDescribe, ``consumer_groups.py``) and
  the clients' traffic through a relay (``wiretap.py``) on both targets, which also proves that
  each member really sent ConsumerGroupHeartbeat and never JoinGroup (franz-go would quietly fall
  back to the classic protocol).

Clients that do not speak KIP-848 in their pinned release (aiokafka 0.14.0, kafka-python 3.0.12,
kafkajs 2.2.4) are listed in ``NOT_SPEAKING`` and the generated document. When every client ran on
every target, the KIP-848 section of ``docs/client-matrix.md`` is rewritten from the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.matrix import kip848_report as report
from tests.matrix.driver_run import PARTITIONS, build_driver, leave_crash_and_take_over
from tests.matrix.harness import build_franz_go, build_java, python_driver
from tests.matrix.kip848_run import GROUP_SETTINGS, Run, TargetInfo
from tests.matrix.wiretap import WireTap

pytestmark = pytest.mark.clients

SESSION_S = GROUP_SETTINGS["group.consumer.session.timeout.ms"] / 1000


@dataclass(frozen=True)
class Client:
    name: str  # as in the table
    key: str  # in the client id: matrix-<key>-<member>
    assignor: str  # the server assignor the members ask for
    build: Callable[[], list[str]]
    notes: str = ""

    @property
    def id(self) -> str:
        return self.key if self.assignor == "uniform" else f"{self.key}-{self.assignor}"


CLIENTS = [
    Client("confluent-kafka", "confluent", "uniform", python_driver("confluent_kafka"),
           "`group.protocol=consumer`, `group.remote.assignor=uniform`"),
    Client("Java KafkaConsumer", "java", "uniform", build_java,
           "`group.protocol=consumer`, `group.remote.assignor=uniform`"),
    Client("franz-go", "franz-go", "uniform", build_franz_go,
           "`kgo.ServerSideBalancer()` with the cooperative sticky balancer, which asks for `uniform`"),
    # The other server assignor, once: range hands each member a contiguous block of the topic.
    Client("confluent-kafka", "confluent", "range", python_driver("confluent_kafka")),
]
NOT_SPEAKING = {
    "aiokafka 0.14.0": "no ConsumerGroupHeartbeat in its protocol module; classic protocol only",
    "kafka-python 3.0.12": "no KIP-848 consumer (dpkp/kafka-python #3000 is open); classic protocol only",
    "kafkajs 2.2.4": "classic protocol only (no ConsumerGroupHeartbeat; nor in 2.3.0-beta.3, the newest beta)",
}
TARGETS = ["emulator", "real-kafka-4"]


@contextlib.contextmanager
def _emulator(topic: str, tmp_path: Path) -> Iterator[TargetInfo]:
    from rebalance_lab.api import Emulator

    recording = tmp_path / "coordinator.jsonl"
    with Emulator(initial_rebalance_delay_ms=0, topics=[(topic, PARTITIONS)], record_path=str(recording),
                  **_emulator_group_options()) as emu:
        yield TargetInfo("emulator", emu.bootstrap_servers, recording)


def _emulator_group_options() -> dict[str, Any]:
    """The emulator's ``group.consumer.*`` settings, the same as the real broker's (GROUP_SETTINGS).

    ``Emulator(consumer_<field>=...)``: ``group.consumer.session.timeout.ms`` is ``consumer_session_timeout_ms``.
    """
    return {"consumer_" + key.removeprefix("group.consumer.").replace(".", "_"): value
            for key, value in GROUP_SETTINGS.items()}


@contextlib.contextmanager
def _real_broker(request: pytest.FixtureRequest) -> Iterator[TargetInfo]:
    broker = request.getfixturevalue("kafka_brokers").get("4", dict(GROUP_SETTINGS))
    yield TargetInfo("real-kafka-4", broker.bootstrap, None, broker)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], report.Result]]:
    collected: dict[tuple[str, str], report.Result] = {}
    yield collected
    # Every run's results, full or not, for a look at what the clients sent (the document needs a full run).
    dump = tmp_path_factory.getbasetemp() / "kip848-results.json"
    dump.write_text(json.dumps([dataclasses.asdict(r) for r in collected.values()], indent=1, default=str))
    if {(c.id, t) for c in CLIENTS for t in TARGETS} <= set(collected):  # only a full run rewrites the section
        report.write(report.DOC_PATH, [collected[c.id, t] for c in CLIENTS for t in TARGETS], NOT_SPEAKING)


def _scenario(run: Run, command: list[str]) -> None:
    leave_crash_and_take_over(run, command, SESSION_S)
    run.check_spoke_kip848()


@pytest.mark.parametrize("target_name", [
    pytest.param("emulator", id="emulator"),
    pytest.param("real-kafka-4", id="real-kafka-4", marks=pytest.mark.broker),
])
@pytest.mark.parametrize("client", CLIENTS, ids=[c.id for c in CLIENTS])
def test_three_consumer_protocol_members_survive_a_leave_and_a_fenced_crash_and_consume_everything(
    client: Client, target_name: str, results: dict[tuple[str, str], report.Result], tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    command, build_s = build_driver(client.name, client.build)
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"kip848-{client.id}-{suffix}", f"kip848-{client.id}-{suffix}"
    target_cm = _emulator(topic, tmp_path) if target_name == "emulator" else _real_broker(request)
    failure: str | None = None
    with target_cm as target, WireTap(target.bootstrap).start() as tap:
        run = Run(client.key, client.assignor, target, tap, topic, group, tmp_path)
        try:
            run.setup()
            _scenario(run, command)
        except Exception as exc:  # AssertionError, TimeoutExpired, a broker error
            failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            raise AssertionError(f"{client.name} on {target_name}: {exc}\n{run.diagnostics()}") from None
        finally:
            run.stop()
            results[client.id, target_name] = report.result_of(run, client.name, client.notes, build_s, failure)
