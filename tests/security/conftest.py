"""Fixtures of the security tests: test certificates (trustme) and a real broker with security listeners.

``secure_broker`` is started once per session (tests/support/secure_broker.py, with StandardAuthorizer) on
the engine of the session's broker pool; unavailable means skipped, except in CI where it is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kafka_broker import BrokerUnavailable, is_ci
from tests.support.secure_broker import Pki, SecureBroker, start_secure_broker

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
# One broker serves every security test: authentication answers do not depend on the authorizer, and the
# ACL scenarios (test_sasl_acl_vs_kafka.py) need it. User:ANONYMOUS (the PLAINTEXT administration listener,
# the controller) is a super user; with no ACL, no one else may do anything.
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"}


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.create(Path(tmp_path_factory.mktemp("pki")))


@pytest.fixture(scope="session")
def secure_broker(kafka_brokers: object, pki: Pki) -> Iterator[SecureBroker]:
    try:
        engine = kafka_brokers._pool.engine()  # type: ignore[attr-defined]  # the session's engine, shared
        broker = start_secure_broker(engine, pki, USERS, AUTHORIZER)
    except BrokerUnavailable as exc:
        if is_ci():
            pytest.fail(f"no secure Kafka broker in CI: {exc}", pytrace=False)
        pytest.skip(f"no secure Kafka broker: {str(exc)[:2000]}")
    try:
        yield broker
    finally:
        broker.stop()
