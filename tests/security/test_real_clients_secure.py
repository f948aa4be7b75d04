"""Real clients against the emulator's security listeners: each produces, joins a group and consumes.

SASL_SSL with SCRAM-SHA-512 for confluent-kafka (librdkafka), kafka-python, aiokafka and the Java client
(kafka-clients 4.4.0); PLAIN and SCRAM-SHA-256 on SASL_PLAINTEXT; mutual TLS on an SSL listener, where a
client without a certificate is refused. The TLS material is the session's trustme CA (conftest ``pki``).
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from tests.security.conftest import USERS
from tests.support.kafka_broker import is_ci
from tests.support.secure_broker import MECHANISMS, Pki

ALICE = ("alice", USERS["alice"])
JAVA_CLIENT = Path(__file__).parent / "java" / "SecureClient.java"


@pytest.fixture(scope="module")
def sasl_ssl(pki: Pki) -> Iterator[Emulator]:
    users = tuple(f"{n}:{p}" for n, p in USERS.items())
    with Emulator(listener="SASL_SSL", sasl_mechanisms=MECHANISMS, users=users, ssl_certfile=pki.cert_file,
                  ssl_keyfile=pki.key_file, initial_rebalance_delay_ms=0) as emu:
        yield emu


@pytest.fixture(scope="module")
def sasl_plaintext() -> Iterator[Emulator]:
    users = tuple(f"{n}:{p}" for n, p in USERS.items())
    with Emulator(listener="SASL_PLAINTEXT", sasl_mechanisms=MECHANISMS, users=users,
                  initial_rebalance_delay_ms=0) as emu:
        yield emu


@pytest.fixture(scope="module")
def mutual_tls(pki: Pki) -> Iterator[Emulator]:
    with Emulator(listener="SSL", ssl_certfile=pki.cert_file, ssl_keyfile=pki.key_file, ssl_cafile=pki.ca_file,
                  initial_rebalance_delay_ms=0) as emu:
        yield emu


def names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"secure-{suffix}", f"group-{suffix}"


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------------------


def confluent_round_trip(bootstrap: str, settings: dict[str, Any], count: int = 3) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    topic, group = names()
    producer = Producer({"bootstrap.servers": bootstrap, **settings})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         **settings})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(120):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) == count:
                break
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def test_confluent_kafka_over_sasl_ssl_with_scram_sha_512(sasl_ssl: Emulator, pki: Pki) -> None:
    settings = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": ALICE[0],
                "sasl.password": ALICE[1], "ssl.ca.location": pki.ca_file}
    assert confluent_round_trip(sasl_ssl.bootstrap_servers, settings) == [b"v0", b"v1", b"v2"]


def test_confluent_kafka_over_sasl_plaintext_with_plain(sasl_plaintext: Emulator) -> None:
    settings = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": ALICE[0],
                "sasl.password": ALICE[1]}
    assert confluent_round_trip(sasl_plaintext.bootstrap_servers, settings) == [b"v0", b"v1", b"v2"]


def test_confluent_kafka_with_a_client_certificate_over_mutual_tls(mutual_tls: Emulator, pki: Pki) -> None:
    cert, key = pki.client("alice")
    settings = {"security.protocol": "SSL", "ssl.ca.location": pki.ca_file, "ssl.certificate.location": cert,
                "ssl.key.location": key}
    assert confluent_round_trip(mutual_tls.bootstrap_servers, settings) == [b"v0", b"v1", b"v2"]


def test_confluent_kafka_with_a_wrong_password_gets_an_authentication_error(sasl_ssl: Emulator, pki: Pki) -> None:
    from confluent_kafka import KafkaError, Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": sasl_ssl.bootstrap_servers, "security.protocol": "SASL_SSL",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "wrong",
                         "ssl.ca.location": pki.ca_file, "error_cb": errors.append, "log_level": 0})
    for _ in range(60):
        producer.poll(0.25)
        if errors:
            break
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed during authentication due to invalid credentials" in errors[0].str()


# -- kafka-python ----------------------------------------------------------------------------------------------


def kafka_python_round_trip(bootstrap: str, settings: dict[str, Any], count: int = 3) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    topic, group = names()
    producer = KafkaProducer(bootstrap_servers=bootstrap, **settings)
    for i in range(count):
        producer.send(topic, f"v{i}".encode()).get(30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             consumer_timeout_ms=20_000, **settings)
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == count:
            break
    consumer.commit()
    consumer.close()
    return values


def test_kafka_python_over_sasl_ssl_with_scram_sha_512(sasl_ssl: Emulator, pki: Pki) -> None:
    settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": ALICE[0],
                "sasl_plain_password": ALICE[1], "ssl_cafile": pki.ca_file}
    assert kafka_python_round_trip(sasl_ssl.bootstrap_servers, settings) == [b"v0", b"v1", b"v2"]


def test_kafka_python_over_sasl_plaintext_with_scram_sha_256(sasl_plaintext: Emulator) -> None:
    settings = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "bob", "sasl_plain_password": USERS["bob"]}
    assert kafka_python_round_trip(sasl_plaintext.bootstrap_servers, settings) == [b"v0", b"v1", b"v2"]


# -- aiokafka -------------------------------------------------------------------------------------------------


async def aiokafka_round_trip(bootstrap: str, cafile: str, count: int = 3) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    settings: dict[str, Any] = {
        "bootstrap_servers": bootstrap, "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": ALICE[0], "sasl_plain_password": ALICE[1],
        "ssl_context": create_ssl_context(cafile=cafile),
    }
    topic, group = names()
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"v{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", **settings)
    await consumer.start()
    values: list[bytes] = []
    try:
        async with asyncio.timeout(60):
            async for message in consumer:
                values.append(message.value)
                if len(values) == count:
                    break
        await consumer.commit()
    finally:
        await consumer.stop()
    return values


def test_aiokafka_over_sasl_ssl_with_scram_sha_512(sasl_ssl: Emulator, pki: Pki) -> None:
    values = asyncio.run(aiokafka_round_trip(sasl_ssl.bootstrap_servers, pki.ca_file))
    assert values == [b"v0", b"v1", b"v2"]


# -- the Java client ------------------------------------------------------------------------------------------


def java_command() -> list[str]:
    from tests.matrix.harness import build_java

    try:
        matrix = build_java()  # the matrix driver's Maven build brings kafka-clients 4.4.0 and its classpath
    except Exception as exc:
        if is_ci():
            pytest.fail(f"no Java client in CI: {exc}", pytrace=False)
        pytest.skip(f"no Java client: {exc}")
    classpath = matrix[matrix.index("-cp") + 1]
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath, str(JAVA_CLIENT)]


def test_the_java_client_over_sasl_ssl_with_scram_sha_512(sasl_ssl: Emulator, pki: Pki, tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ALICE[0]}" password="{ALICE[1]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_file}\n"
    )
    topic, group = names()
    done = subprocess.run([*java_command(), sasl_ssl.bootstrap_servers, topic, group, "3", str(properties)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == f"consumed 3 group {group}"
