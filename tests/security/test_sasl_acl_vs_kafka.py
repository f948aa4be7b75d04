"""Authentication and authorization together: who a connection is decides what it may do, on both sides.

The session's real 4.4.0 broker with StandardAuthorizer (conftest.AUTHORIZER: no one but the super user
``User:ANONYMOUS``, its PLAINTEXT administration listener and controller, may do anything without an ACL) and
the emulator with the same ACLs from an ACL file. The principals come from the security listeners:
``User:alice``/``User:bob`` after SCRAM-SHA-512 over SASL_SSL, and a client certificate's subject over mutual
TLS, which establishes on the real broker the DN format of the principal
(``User:CN=carol,OU=Testing,O=rebalance-lab``).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.protocol import codec
from tests.security.conftest import USERS
from tests.security.wire import METADATA, Wire, scram_login
from tests.support.secure_broker import Pki, SecureBroker

TOPIC, GROUP = "orders", "g-alice"
CAROL = "User:CN=carol,OU=Testing,O=rebalance-lab"
ACLS = [  # (principal, operation, resource type, resource name)
    ("User:alice", "READ", "TOPIC", TOPIC), ("User:alice", "WRITE", "TOPIC", TOPIC),
    ("User:alice", "READ", "GROUP", GROUP), (CAROL, "DESCRIBE", "TOPIC", TOPIC),
]
CODES = {"READ": 3, "WRITE": 4, "DESCRIBE": 8, "TOPIC": 2, "GROUP": 3}
OFFSET_FETCH, CREATE_ACLS, CREATE_TOPICS = 9, 30, 19


@pytest.fixture(scope="module")
def acl_broker(secure_broker: SecureBroker) -> SecureBroker:
    """The session's secure broker (StandardAuthorizer, conftest.AUTHORIZER) with the topic and the ACLs."""
    with Wire.connect(secure_broker.plaintext) as admin:
        create_topic(admin)
        create_acls(admin)
    return secure_broker


def create_topic(admin: Wire) -> None:
    topic = codec.data_class(codec.request_type(CREATE_TOPICS), "CreatableTopic")
    answer = admin.request(CREATE_TOPICS, 7, topics=[topic(name=TOPIC, num_partitions=1, replication_factor=1,
                                                           assignments=[], configs=[])],
                           timeout_ms=30_000, validate_only=False)
    assert [t.error_code for t in answer.topics] == [0]


def create_acls(admin: Wire) -> None:
    shape = codec.data_class(codec.request_type(CREATE_ACLS), "AclCreation")
    creations = [shape(resource_type=CODES[kind], resource_name=name, resource_pattern_type=3, principal=principal,
                       host="*", operation=CODES[op], permission_type=3) for principal, op, kind, name in ACLS]
    answer = admin.request(CREATE_ACLS, 3, creations=creations)
    assert [r.error_code for r in answer.results] == [0] * len(ACLS)


@pytest.fixture(scope="module")
def acl_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("acls")) / "acls.json"
    path.write_text(json.dumps({"acls": [{"principal": p, "operation": op, "resource_type": kind,
                                          "resource_name": name} for p, op, kind, name in ACLS]}))
    return str(path)


@pytest.fixture(scope="module")
def sasl_ssl_emulator(pki: Pki, acl_file: str) -> Iterator[str]:
    users = tuple(f"{n}:{p}" for n, p in USERS.items())
    with Emulator(listener="SASL_SSL", sasl_mechanisms=("SCRAM-SHA-512",), users=users, ssl_certfile=pki.cert_file,
                  ssl_keyfile=pki.key_file, acl_file=acl_file, topics=[(TOPIC, 1)]) as emu:
        yield emu.bootstrap_servers


@pytest.fixture(scope="module")
def mutual_tls_emulator(pki: Pki, acl_file: str) -> Iterator[str]:
    with Emulator(listener="SSL", ssl_certfile=pki.cert_file, ssl_keyfile=pki.key_file, ssl_cafile=pki.ca_file,
                  acl_file=acl_file, topics=[(TOPIC, 1)]) as emu:
        yield emu.bootstrap_servers


def metadata(wire: Wire) -> list[tuple[str, int]]:
    topic = codec.data_class(codec.request_type(METADATA), "MetadataRequestTopic")
    answer = wire.request(METADATA, 12, topics=[topic(topic_id=None, name=TOPIC)], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    return [(t.name, t.error_code) for t in answer.topics]


def offset_fetch(wire: Wire) -> tuple[int, list[tuple[str, int, int]]]:
    topic = codec.data_class(codec.request_type(OFFSET_FETCH), "OffsetFetchRequestTopic")
    answer = wire.request(OFFSET_FETCH, 7, group_id=GROUP, topics=[topic(name=TOPIC, partition_indexes=[0])],
                          require_stable=False)
    return answer.error_code, [(t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions]


def as_user(address: str, cafile: str, user: str) -> dict[str, Any]:
    with Wire.connect(address, cafile=cafile) as wire:
        assert scram_login(wire, "SCRAM-SHA-512", user, USERS[user])[-1].error_code == 0
        return {"metadata": metadata(wire), "offset_fetch": offset_fetch(wire)}


def test_scram_users_get_what_their_acls_allow_as_on_kafka(
    acl_broker: SecureBroker, sasl_ssl_emulator: str, pki: Pki
) -> None:
    for user, expected in [
        ("alice", {"metadata": [(TOPIC, 0)], "offset_fetch": (0, [(TOPIC, 0, 0)])}),
        ("bob", {"metadata": [(TOPIC, 29)], "offset_fetch": (30, [])}),  # TOPIC_/GROUP_AUTHORIZATION_FAILED
    ]:
        on_kafka = as_user(acl_broker.sasl_ssl, pki.ca_file, user)
        assert on_kafka == expected, user
        assert as_user(sasl_ssl_emulator, pki.ca_file, user) == on_kafka, user


def as_certificate(address: str, pki: Pki, name: str) -> list[tuple[str, int]]:
    context = ssl.create_default_context(cafile=pki.ca_file)
    context.load_cert_chain(*pki.client(name))
    with Wire.connect(address, context=context) as wire:
        return metadata(wire)


def test_the_principal_of_a_client_certificate_is_the_subject_dn_kafka_writes(
    acl_broker: SecureBroker, mutual_tls_emulator: str, pki: Pki
) -> None:
    for name, expected in [("carol", [(TOPIC, 0)]), ("dave", [(TOPIC, 29)])]:
        on_kafka = as_certificate(acl_broker.ssl, pki, name)
        assert on_kafka == expected, name
        assert as_certificate(mutual_tls_emulator, pki, name) == on_kafka, name
