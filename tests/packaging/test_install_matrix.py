"""The built wheel installs beside any user's Kafka clients without changing them, and works with each (issue 21).

For kafka-python 2.0.x, 2.3.x and 3.0.x (each with an aiokafka and a confluent-kafka of its time, and pytest):
the environment's packages are exactly as before except rebalance-lab and its own dependencies; ``rebalance-lab
serve`` answers that kafka-python's group join; the Python API and the pytest plugin run a test using it.
Environments are cached (``install_matrix.CACHE``); a failure to build or install fails the test.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.packaging.dists import Dists
from tests.packaging.install_matrix import CLIENT_SETS, ClientSet, Env, install, prepared

# rebalance-lab's runtime dependencies (pyproject.toml) and theirs: nothing else may appear or change
OWN = {"rebalance-lab", "crc32c", "google-re2", "scramp", "asn1crypto"}

_JOIN = """
import sys, time
from kafka import KafkaConsumer

def join(bootstrap, group):
    consumer = KafkaConsumer("orders", group_id=group, bootstrap_servers=bootstrap, session_timeout_ms=10000,
                             heartbeat_interval_ms=1000)
    # knows the topic's partitions before it joins (tests/support/kafka_python_join: kafka-python 3.0.12's lost rejoin)
    consumer.partitions_for_topic("orders")
    deadline = time.time() + 60
    while not consumer.assignment() and time.time() < deadline:
        consumer.poll(timeout_ms=200)
    partitions = sorted(tp.partition for tp in consumer.assignment())
    consumer.close()
    return partitions
"""

_USER_TESTS = """
import pytest
from rebalance_lab.api import Emulator
from join import join

def test_the_python_api_serves_a_kafka_python_group():
    with Emulator(topics=[("orders", 2)], initial_rebalance_delay_ms=0) as emu:
        assert join(emu.bootstrap_servers, "api-group") == [0, 1]
        assert emu.wait_for_group("api-group", state="Empty").generation_id >= 1

@pytest.mark.rebalance_lab(topics=[("orders", 2)], initial_rebalance_delay_ms=0)
def test_the_plugin_fixture_serves_a_kafka_python_group(rebalance_lab):
    assert join(rebalance_lab.bootstrap_servers, "plugin-group") == [0, 1]
"""


def _name(line: str) -> str:
    return re.split(r"==| @ ", line)[0].lower().replace("_", "-")


def _serve_and_join(env: Env, workdir: Path) -> str:
    server = subprocess.Popen([env.bin("rebalance-lab"), "serve", "--port", "0", "--topic", "orders:2",
                               "--initial-rebalance-delay-ms", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"bootstrap servers: (\S+)", line)
        assert found, f"serve printed {line!r}; stderr: {server.stderr.read() if server.poll() is not None else ''}"
        done = subprocess.run([env.python, "-c", f"from join import join; print(join({found.group(1)!r}, 'cli'))"],
                              capture_output=True, text=True, timeout=120, cwd=workdir)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip()
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("clients", CLIENT_SETS, ids=lambda c: c.name)
def test_the_wheel_installs_beside_the_clients_unchanged_and_serves_them(clients: ClientSet, built_dists: Dists,
                                                                        tmp_path: Path) -> None:
    env = prepared(clients)
    before = env.freeze()
    install(env, built_dists.wheel)
    after = env.freeze()
    assert sorted(before - after) == []  # nothing the environment had was changed or removed
    assert sorted(_name(line) for line in after - before if _name(line) not in OWN) == []
    assert f"kafka-python=={clients.kafka_python}" in after

    (tmp_path / "join.py").write_text(textwrap.dedent(_JOIN))
    assert _serve_and_join(env, tmp_path) == "[0, 1]"

    (tmp_path / "test_user.py").write_text(textwrap.dedent(_USER_TESTS))
    done = subprocess.run([env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "2 passed" in done.stdout
