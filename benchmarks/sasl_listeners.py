"""Security listeners: what a misconfigured SASL client costs, and what a login costs.

1. A librdkafka producer and consumer configured for SASL (SCRAM-SHA-512) pointed at a PLAINTEXT listener
   (issue 17, defect 11): connections opened per second, counted by a relay in front of the server; with
   ``--broker`` also in front of a real Kafka 4.4.0 broker. The emulator used to close the connection on
   SaslHandshake; it now answers ILLEGAL_SASL_STATE as Kafka does. The consumer's ~19-20 reconnections a
   second are librdkafka's own: a real 4.4.0 broker sees the same rate (measured with ``--broker``).
2. The same clients with a wrong password against a SASL_PLAINTEXT listener (Kafka's answer, then closed).
3. Logins per second on one core, per mechanism, over SASL_PLAINTEXT and SASL_SSL (raw client: TCP/TLS
   connect, handshake, authenticate, one Metadata request).

    .venv/bin/python benchmarks/sasl_listeners.py [--seconds 5] [--logins 200]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rebalance_lab.api import Emulator  # noqa: E402
from tests.security.wire import METADATA, Wire, plain_token, scram_login  # noqa: E402
from tests.support.secure_broker import MECHANISMS, Pki  # noqa: E402

USERS = ("alice:alice-secret",)


def counting_proxy(target: str) -> tuple[str, list[float]]:
    """A TCP relay to ``target`` that notes when each connection arrives (works for the emulator and Kafka)."""
    host, port = target.split(",")[0].rsplit(":", 1)
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[float] = []

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for end in (src, dst):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        while True:
            client, _ = listener.accept()
            accepted.append(time.monotonic())
            upstream = socket.create_connection((host, int(port)))
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return f"127.0.0.1:{listener.getsockname()[1]}", accepted


def attempts_per_second(target: str, kind: str, password: str, seconds: float) -> float:
    """Connections per second a librdkafka producer or consumer configured for SCRAM-SHA-512 opens."""
    from confluent_kafka import Consumer, Producer

    address, accepted = counting_proxy(target)
    settings = {"bootstrap.servers": address, "security.protocol": "SASL_PLAINTEXT", "log_level": 0,
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": password,
                "error_cb": lambda error: None}
    started = time.monotonic()
    if kind == "consumer":
        consumer = Consumer({**settings, "group.id": "g"})
        consumer.subscribe(["t"])
        while time.monotonic() - started < seconds:
            consumer.poll(0.1)
        consumer.close()
    else:
        producer = Producer(settings)
        while time.monotonic() - started < seconds:
            producer.poll(0.1)
    return len(accepted) / seconds


def misconfigured_clients(seconds: float, broker: str | None) -> None:
    with Emulator() as plain, Emulator(listener="SASL_PLAINTEXT", sasl_mechanisms=("SCRAM-SHA-512",),
                                       users=USERS) as sasl:
        for kind in ("consumer", "producer"):
            rate = attempts_per_second(plain.bootstrap_servers, kind, "alice-secret", seconds)
            line = f"  SASL {kind} on a PLAINTEXT listener: emulator {rate:5.1f} connections/s"
            if broker is not None:
                line += f", Kafka 4.4.0 {attempts_per_second(broker, kind, 'alice-secret', seconds):5.1f}"
            print(line)
            rate = attempts_per_second(sasl.bootstrap_servers, kind, "wrong", seconds)
            print(f"  {kind} with a wrong password on SASL_PLAINTEXT: emulator {rate:5.1f} connections/s")


def login(address: str, mechanism: str, cafile: str | None) -> None:
    with Wire.connect(address, cafile=cafile) as wire:
        if mechanism == "PLAIN":
            wire.handshake("PLAIN")
            assert wire.authenticate(plain_token("alice", "alice-secret")).error_code == 0
        else:
            assert scram_login(wire, mechanism, "alice", "alice-secret")[-1].error_code == 0
        wire.request(METADATA, 12, topics=[], allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)


def logins_per_second(logins: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pki = Pki.create(Path(tmp))
        tls = {"ssl_certfile": pki.cert_file, "ssl_keyfile": pki.key_file}
        for listener, extra, cafile in (("SASL_PLAINTEXT", {}, None), ("SASL_SSL", tls, pki.ca_file)):
            with Emulator(listener=listener, sasl_mechanisms=MECHANISMS, users=USERS, **extra) as emu:
                for mechanism in MECHANISMS:
                    started = time.perf_counter()
                    for _ in range(logins):
                        login(emu.bootstrap_servers, mechanism, cafile)
                    elapsed = time.perf_counter() - started
                    print(f"  {listener:<15} {mechanism:<14} {logins / elapsed:7.1f} logins/s "
                          f"({elapsed / logins * 1000:.2f} ms each, client and server on this machine)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--logins", type=int, default=200)
    parser.add_argument("--broker", action="store_true", help="also measure a real Kafka 4.4.0 broker (Podman)")
    args = parser.parse_args()
    print("misconfigured librdkafka clients (confluent-kafka 2.16.1), connections opened per second:")
    if args.broker:
        from tests.support.kafka_broker import BrokerPool

        pool = BrokerPool()
        try:
            misconfigured_clients(args.seconds, pool.get("4").bootstrap)
        finally:
            pool.close()
    else:
        misconfigured_clients(args.seconds, None)
    print("logins:")
    logins_per_second(args.logins)


if __name__ == "__main__":
    main()
