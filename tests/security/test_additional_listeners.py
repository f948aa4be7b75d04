"""Several listeners at once (``--additional-listener``): each broker serves every protocol on its own port,
and every address a client is given (Metadata, FindCoordinator) is the one of the listener it came in on,
as Kafka answers with the endpoints of the request's listener."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator, make_config
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.security.listeners import ListenerConfigError
from tests.security.conftest import USERS
from tests.security.test_real_clients_secure import confluent_round_trip, kafka_python_round_trip
from tests.security.wire import METADATA, Wire, scram_login
from tests.support.secure_broker import Pki

FIND_COORDINATOR = 10


@pytest.fixture(scope="module")
def emulator(pki: Pki) -> Iterator[Emulator]:
    users = tuple(f"{n}:{p}" for n, p in USERS.items())
    with Emulator(brokers=2, additional_listeners=("SASL_SSL", "SSL:0"), sasl_mechanisms=("SCRAM-SHA-512",),
                  users=users, ssl_certfile=pki.cert_file, ssl_keyfile=pki.key_file,
                  initial_rebalance_delay_ms=0) as emu:
        yield emu


def ports(bootstrap: str) -> list[int]:
    return sorted(int(address.rsplit(":", 1)[1]) for address in bootstrap.split(","))


def told(wire: Wire) -> dict[str, Any]:
    brokers = wire.request(METADATA, 12, topics=[], allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False).brokers
    coordinator = wire.request(FIND_COORDINATOR, 4, key_type=0, coordinator_keys=["g"]).coordinators[0]
    return {"metadata": sorted(b.port for b in brokers), "coordinator": coordinator.port}


def test_each_listener_gives_the_addresses_of_its_own_ports(emulator: Emulator, pki: Pki) -> None:
    plain, sasl, tls = (emulator.bootstrap_servers, emulator.bootstrap_servers_of("SASL_SSL"),
                        emulator.bootstrap_servers_of("ssl"))
    assert len({*ports(plain), *ports(sasl), *ports(tls)}) == 6  # 2 brokers x 3 listeners
    with Wire.connect(plain.split(",")[0]) as wire:
        on_plain = told(wire)
    with Wire.connect(sasl.split(",")[0], cafile=pki.ca_file) as wire:
        scram_login(wire, "SCRAM-SHA-512", "alice", USERS["alice"])
        on_sasl = told(wire)
    with Wire.connect(tls.split(",")[1], cafile=pki.ca_file) as wire:
        on_tls = told(wire)
    assert on_plain["metadata"] == ports(plain) and on_plain["coordinator"] in ports(plain)
    assert on_sasl["metadata"] == ports(sasl) and on_sasl["coordinator"] in ports(sasl)
    assert on_tls["metadata"] == ports(tls) and on_tls["coordinator"] in ports(tls)


def test_real_clients_on_different_listeners_share_one_cluster(emulator: Emulator, pki: Pki) -> None:
    sasl = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
            "sasl_plain_password": USERS["alice"], "ssl_cafile": pki.ca_file}
    values = kafka_python_round_trip(emulator.bootstrap_servers_of("SASL_SSL"), sasl)
    assert values == [b"v0", b"v1", b"v2"]
    assert confluent_round_trip(emulator.bootstrap_servers, {}) == [b"v0", b"v1", b"v2"]
    topics = {t for t in emulator.server.world.cluster.topics if t.startswith("secure-")}
    assert len(topics) >= 2  # both clients' topics live in the one emulated cluster


def test_a_listener_given_twice_or_without_what_it_needs_is_refused() -> None:
    with pytest.raises(ListenerConfigError, match="given twice"):
        EmulatorServer(make_config(additional_listeners=("PLAINTEXT",)))
    with pytest.raises(ListenerConfigError, match="needs --ssl-certfile"):
        EmulatorServer(make_config(additional_listeners=("SSL",)))
    with pytest.raises(ListenerConfigError, match="not PROTOCOL"):
        EmulatorServer(make_config(additional_listeners=("SSL:port",)))


def test_serve_prints_one_bootstrap_line_per_additional_listener(pki: Pki) -> None:
    exe = str(Path(sys.executable).with_name("rebalance-lab"))
    proc = subprocess.Popen([exe, "serve", "--port", "0", "--additional-listener", "SSL",
                             "--ssl-certfile", pki.cert_file, "--ssl-keyfile", pki.key_file],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert re.search(r"bootstrap servers: 127\.0\.0\.1:\d+$", first.strip())
    assert re.fullmatch(r"SSL listener; bootstrap servers: 127\.0\.0\.1:\d+", second.strip())
