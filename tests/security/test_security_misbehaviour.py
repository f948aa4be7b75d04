"""Misbehaving clients on a secure listener never hurt a well-behaved group (issue 17, "one misbehaving client
never hurts another").

A canary group (tests/support/canary.py) logs in with SCRAM-SHA-512 over SASL_SSL and heartbeats while, one
after another: connections that never start TLS, TLS connections that never authenticate, a storm of refused
logins, and unauthenticated clients announcing frames over sasl.server.max.receive.size. The canary must lose
no member, see no rebalance, and have every heartbeat answered; each misbehaving client gets what Kafka gives
it (a refused login is answered, then closed).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scramp import ScramClient

from rebalance_lab.api import Emulator
from rebalance_lab.protocol import codec
from tests.security.conftest import USERS
from tests.security.wire import Closed, Wire, scram_login
from tests.support.canary import Canary, Connector
from tests.support.secure_broker import Pki

MECHANISM = "SCRAM-SHA-512"


@pytest.fixture(scope="module")
def emulator(pki: Pki) -> Iterator[Emulator]:
    users = tuple(f"{n}:{p}" for n, p in USERS.items())
    with Emulator(listener="SASL_SSL", sasl_mechanisms=(MECHANISM,), users=users, ssl_certfile=pki.cert_file,
                  ssl_keyfile=pki.key_file, initial_rebalance_delay_ms=0) as emu:
        yield emu


def sasl_ssl_connector(cafile: str) -> Connector:
    """The canary's connections: TLS, then SCRAM-SHA-512 as alice through SaslHandshake v1/SaslAuthenticate v2."""
    context = ssl.create_default_context(cafile=cafile)

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_key: int, version: int,
                       correlation: int, **fields: object) -> Any:
        writer.write(codec.encode_request(codec.new_request(api_key, version, **fields), correlation, "canary"))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        answer = codec.decode_response(api_key, version, await reader.readexactly(size))
        assert answer.error_code == 0, answer
        return answer

    async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(host, port, ssl=context, server_hostname=host)
        await exchange(reader, writer, 17, 1, 1, mechanism=MECHANISM)
        client = ScramClient([MECHANISM], "alice", USERS["alice"])
        first = await exchange(reader, writer, 36, 2, 2, auth_bytes=client.get_client_first().encode())
        client.set_server_first(first.auth_bytes.decode())
        final = await exchange(reader, writer, 36, 2, 3, auth_bytes=client.get_client_final().encode())
        client.set_server_final(final.auth_bytes.decode())
        return reader, writer

    return connect


def with_canary(emu: Emulator, pki: Pki, misbehave: Callable[[], None]) -> None:
    canary = Canary(emu.bootstrap_servers, connect=sasl_ssl_connector(pki.ca_file))
    canary.start()
    try:
        canary.wait_stable_blocking(60)
        misbehave()
        # A quick misbehaviour can end before the canary's next heartbeat (every 200 ms): let it beat a few
        # times afterwards, so the report shows the group was still served (a full run once saw none).
        time.sleep(1.0)
    finally:
        report = canary.stop_blocking()
    report.assert_healthy()
    assert report.latencies_ms, "the canary heartbeated"


def in_threads(n: int, work: Callable[[], None]) -> None:
    threads = [threading.Thread(target=work) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)


def test_connections_that_never_start_tls_or_never_log_in_hurt_no_one(emulator: Emulator, pki: Pki) -> None:
    host, port = emulator.bootstrap_servers.rsplit(":", 1)

    def misbehave() -> None:
        silent = [socket.create_connection((host, int(port))) for _ in range(100)]  # no ClientHello
        idle = [Wire.connect(emulator.bootstrap_servers, cafile=pki.ca_file) for _ in range(30)]  # TLS, no SASL
        with Wire.connect(emulator.bootstrap_servers, cafile=pki.ca_file) as late:  # still served meanwhile
            assert scram_login(late, MECHANISM, "bob", USERS["bob"])[-1].error_code == 0
        for conn in silent:
            conn.close()
        for wire in idle:
            wire.close()

    with_canary(emulator, pki, misbehave)


def test_a_storm_of_refused_logins_hurts_no_one_and_each_is_answered_then_closed(
    emulator: Emulator, pki: Pki
) -> None:
    refused: list[int] = []

    def refuse_many() -> None:
        for _ in range(25):
            with Wire.connect(emulator.bootstrap_servers, cafile=pki.ca_file) as wire:
                answers = scram_login(wire, MECHANISM, "alice", "wrong")
                refused.append(answers[-1].error_code)
                assert wire.is_closed()

    with_canary(emulator, pki, lambda: in_threads(4, refuse_many))
    assert refused == [58] * 100  # SASL_AUTHENTICATION_FAILED, every time


def test_unauthenticated_clients_announcing_huge_frames_are_closed_and_hurt_no_one(
    emulator: Emulator, pki: Pki
) -> None:
    closed: list[bool] = []

    def announce() -> None:
        for _ in range(10):
            with Wire.connect(emulator.bootstrap_servers, cafile=pki.ca_file) as wire:
                wire.sock.sendall(struct.pack(">i", 100_000_000) + b"\x00\x11")  # 100 MB before login
                try:
                    closed.append(wire.is_closed())
                except Closed:
                    closed.append(True)

    with_canary(emulator, pki, lambda: in_threads(4, announce))
    assert closed == [True] * 40
