"""A real Kafka 4.x broker with security listeners, for the security differential tests.

One single-node KRaft broker (the image of tests/support/kafka_broker.py, through the same container
engine) listening on four ports:

* ``PLAINTEXT``: the readiness check and the administration (SCRAM users are created through it with
  AlterUserScramCredentials; with an authorizer, ``User:ANONYMOUS`` is a super user);
* ``SASL_PLAINTEXT`` and ``SASL_SSL``: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, the same users on both;
* ``SSL``: mutual TLS (``ssl.client.auth=required``), the client certificate's subject is the principal.

TLS material comes from :class:`Pki` (trustme): the broker's PEM key store and trust store are given
as config values (``ssl.keystore.type=PEM``, ``ssl.keystore.certificate.chain``/``ssl.keystore.key``,
``ssl.truststore.certificates``), their newlines written as ``\\n``, which Java's ``Properties`` reads
back as newlines.

Usage::

    pki = Pki.create(tmp_dir)
    broker = start_secure_broker(pool.engine(), pki, {"alice": "alice-secret"})
    broker.sasl_ssl      # "127.0.0.1:PORT"; also .plaintext, .sasl_plaintext, .ssl, .ca_file
    broker.stop()

``settings`` adds broker properties (e.g. an authorizer: ``authorizer.class.name=org.apache.kafka.
metadata.authorizer.StandardAuthorizer``, ``super.users=User:ANONYMOUS;User:admin``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.blocking_frames import read_frame
from tests.support.container_engine import ContainerEngine
from tests.support.kafka_broker import (
    CONTAINER_PREFIX,
    BrokerUnavailable,
    _container_alive,
    broker_environment,
    free_port,
    load_build_script,
    normalize_settings,
    wait_until_ready,
)

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_ITERATIONS = 4096
LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL")


@dataclass(frozen=True)
class Pki:
    """A test CA, a certificate for 127.0.0.1/localhost (the servers) and client certificates, as PEM files."""

    directory: Path
    ca_file: str
    cert_file: str
    key_file: str  # PKCS#8, as Kafka's PEM key store wants it
    _ca: Any = field(repr=False, compare=False)

    @classmethod
    def create(cls, directory: Path) -> Pki:
        import trustme

        ca = trustme.CA(organization_name="rebalance-lab test CA")
        server = ca.issue_cert("127.0.0.1", "localhost", common_name="localhost")
        directory.mkdir(parents=True, exist_ok=True)
        ca_file, cert_file, key_file = (str(directory / n) for n in ("ca.pem", "server.pem", "server-key.pem"))
        ca.cert_pem.write_to_path(ca_file)
        Path(cert_file).write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
        Path(key_file).write_bytes(_pkcs8(server.private_key_pem.bytes()))
        return cls(directory, ca_file, cert_file, key_file, ca)

    def client(self, name: str, organization: str = "rebalance-lab", unit: str = "Testing") -> tuple[str, str]:
        """(certificate file, key file) of a client certificate with the subject O=<organization>,OU=<unit>,
        CN=<name> (Kafka's principal: ``User:CN=<name>,OU=<unit>,O=<organization>``)."""
        leaf = self._ca.issue_cert(f"{name}.client.test", common_name=name, organization_name=organization,
                                   organization_unit_name=unit)
        cert_file, key_file = str(self.directory / f"{name}.pem"), str(self.directory / f"{name}-key.pem")
        Path(cert_file).write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        Path(key_file).write_bytes(_pkcs8(leaf.private_key_pem.bytes()))
        return cert_file, key_file


def _pkcs8(pem: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class SecureBroker:
    ports: dict[str, int]
    ca_file: str
    users: dict[str, str]
    container: Any = field(default=None, repr=False)

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    @property
    def plaintext(self) -> str:
        return self.address("PLAINTEXT")

    @property
    def sasl_plaintext(self) -> str:
        return self.address("SASL_PLAINTEXT")

    @property
    def sasl_ssl(self) -> str:
        return self.address("SASL_SSL")

    @property
    def ssl(self) -> str:
        return self.address("SSL")

    def logs(self) -> str:
        if self.container is None:
            return ""
        out, err = self.container.get_logs()
        return (out or b"").decode(errors="replace") + (err or b"").decode(errors="replace")

    def stop(self) -> None:
        if self.container is not None:
            container, self.container = self.container, None
            container.stop()


def _pem_value(path: str) -> str:
    return Path(path).read_text().strip().replace("\n", "\\n")


def secure_settings(ports: Mapping[str, int], pki: Pki, users: Mapping[str, str]) -> dict[str, str]:
    """The broker properties of the four listeners (on top of kafka_broker.DEFAULT_SETTINGS)."""
    plain_users = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    props = {
        "listeners": ",".join(f"{name}://0.0.0.0:{port}" for name, port in ports.items())
        + ",CONTROLLER://127.0.0.1:9093",
        "advertised.listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT," + ",".join(f"{n}:{n}" for n in ports),
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": _pem_value(pki.cert_file),
        "ssl.keystore.key": _pem_value(pki.key_file),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": _pem_value(pki.ca_file),
        "listener.name.ssl.ssl.client.auth": "required",
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
        )
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            props[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
    return props


def start_secure_broker(engine: ContainerEngine, pki: Pki, users: Mapping[str, str],
                        settings: Mapping[str, str] | None = None, *, timeout: float = 240.0) -> SecureBroker:
    """Start the broker, wait until it serves, and create every user's SCRAM credentials."""
    from testcontainers.core.container import DockerContainer

    build = load_build_script()
    image = os.environ.get("REBALANCE_LAB_KAFKA_IMAGE", "").strip()
    if not image:  # as kafka_broker.start_container_broker: built locally on Podman, the official one on Docker
        release = build.KAFKA_RELEASES["4"]
        image = str(build.build(["4"])["4"]) if engine.local_images_only else str(release.official_image)
    ports = {name: free_port() for name in LISTENERS}
    props = {**normalize_settings("4", None), **secure_settings(ports, pki, users), **(settings or {})}
    container = DockerContainer(image)
    for key, value in broker_environment(ports["PLAINTEXT"], props).items():
        container.with_env(key, value)
    container.with_name(f"{CONTAINER_PREFIX}4-{os.getpid()}-{ports['PLAINTEXT']}")
    for port in ports.values():
        container.ports[f"{port}/tcp"] = ("127.0.0.1", port)
    broker = SecureBroker(ports, pki.ca_file, dict(users), container)
    try:
        container.start()
        wait_until_ready(broker.plaintext, timeout, _container_alive(container))
        for name, password in users.items():
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                upsert_scram_user(broker.plaintext, mechanism, name, password)
        _wait_for_scram(broker, next(iter(users.items())))
    except Exception as exc:
        logs = ""
        with contextlib.suppress(Exception):
            logs = broker.logs()[-4000:]
        broker.stop()
        raise BrokerUnavailable(f"secure Kafka broker: {exc}\n{logs}") from exc
    except BaseException:
        broker.stop()
        raise
    return broker


def upsert_scram_user(bootstrap: str, mechanism: str, name: str, password: str) -> None:
    """AlterUserScramCredentials v0 with a salted password computed here (Kafka's ScramFormatter.hi)."""
    from rebalance_lab.protocol import codec

    salt = os.urandom(32)
    algorithm = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    salted = hashlib.pbkdf2_hmac(algorithm, password.encode(), salt, SCRAM_ITERATIONS)
    upsertion = codec.data_class(codec.request_type(51), "ScramCredentialUpsertion")
    request = codec.new_request(51, 0, deletions=[], upsertions=[upsertion(
        name=name, mechanism=1 if mechanism == "SCRAM-SHA-256" else 2, iterations=SCRAM_ITERATIONS,
        salt=salt, salted_password=salted)])
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(codec.encode_request(request, 1, "secure-broker-setup"))
        answer = codec.decode_response(51, 0, read_frame(sock))
    errors = [(r.user, r.error_code, r.error_message) for r in answer.results if r.error_code]
    if errors:
        raise BrokerUnavailable(f"AlterUserScramCredentials failed: {errors}")


def _wait_for_scram(broker: SecureBroker, user: tuple[str, str], timeout: float = 30.0) -> None:
    """The credentials reach the broker's cache through the metadata log: retry one login until it works."""
    from tests.security.wire import Wire, scram_login

    deadline = time.monotonic() + timeout
    while True:
        with Wire.connect(broker.sasl_plaintext) as wire:
            if scram_login(wire, "SCRAM-SHA-512", *user)[-1].error_code == 0:
                return
        if time.monotonic() > deadline:
            raise BrokerUnavailable(f"SCRAM user {user[0]} never became usable")
        time.sleep(0.2)
