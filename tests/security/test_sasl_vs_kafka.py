"""SASL on the wire: the same scenarios on the emulator and on a real Kafka 4.4.0 broker, same answers.

Each scenario drives a raw connection (tests/security/wire.py) and lists what came back: each answer's
type, error code, error message and mechanisms, "closed" when the server closed the connection instead
of answering, "open" when a later request was still served. The emulator must list exactly what the
broker lists; the expected lists are written out as well, so the emulator's side also pins Kafka's facts
(established on 4.4.0 by these tests: see FIDELITY.md, "Security").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scramp import ScramClient

from rebalance_lab.api import Emulator
from tests.security.conftest import USERS
from tests.security.wire import API_VERSIONS, METADATA, Closed, Wire, plain_token, scram_login, summary
from tests.support.secure_broker import MECHANISMS, Pki, SecureBroker

Scenario = Callable[[Wire], list[Any]]
FAILED = 58  # SASL_AUTHENTICATION_FAILED
ENABLED = ("PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256")  # Java's HashSet order of MECHANISMS
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


@pytest.fixture(scope="module")
def emulators(pki: Pki) -> Iterator[dict[str, str]]:
    users = tuple(f"{name}:{password}" for name, password in USERS.items())
    common: dict[str, Any] = {"sasl_mechanisms": MECHANISMS, "users": users}
    with Emulator(listener="SASL_PLAINTEXT", **common) as sasl, Emulator() as plain, \
            Emulator(listener="SASL_SSL", ssl_certfile=pki.cert_file, ssl_keyfile=pki.key_file, **common) as tls:
        yield {"SASL_PLAINTEXT": sasl.bootstrap_servers, "PLAINTEXT": plain.bootstrap_servers,
               "SASL_SSL": tls.bootstrap_servers}


def run(address: str, scenario: Scenario, cafile: str | None = None) -> list[Any]:
    with Wire.connect(address, cafile=cafile, timeout=10) as wire:
        try:
            outcome = scenario(wire)
        except Closed:
            return ["closed"]
        return outcome


def both(emulators: dict[str, str], broker: SecureBroker, listener: str, scenario: Scenario) -> list[Any]:
    cafile = broker.ca_file if listener == "SASL_SSL" else None
    on_kafka = run(broker.address(listener), scenario, cafile)
    on_emulator = run(emulators[listener], scenario, cafile)
    assert on_emulator == on_kafka
    return on_kafka


def still_served(wire: Wire) -> str:
    """'open' if a Metadata request is answered, else 'closed'."""
    try:
        wire.request(METADATA, 12, topics=[], allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)
    except Closed:
        return "closed"
    return "open"


def closed_or_open(wire: Wire) -> str:
    return "closed" if wire.is_closed() else "open"


# -- successful logins -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_good_login_is_answered_alike_and_the_connection_then_serves_requests(
    emulators: dict[str, str], secure_broker: SecureBroker, mechanism: str, listener: str
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        if mechanism == "PLAIN":
            answers = [wire.handshake("PLAIN"), wire.authenticate(plain_token("alice", "alice-secret"))]
        else:
            answers = scram_login(wire, mechanism, "alice", "alice-secret")
        return [summary(a) for a in answers] + [still_served(wire)]

    outcome = both(emulators, secure_broker, listener, scenario)
    assert outcome[0] == ("SaslHandshakeResponse", 0, None, ENABLED)
    assert outcome[-1] == "open"


# -- refused logins --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mechanism", "user", "password"), [
    ("PLAIN", "alice", "wrong"), ("PLAIN", "mallory", "x"),
    ("SCRAM-SHA-256", "alice", "wrong"), ("SCRAM-SHA-512", "alice", "wrong"), ("SCRAM-SHA-512", "mallory", "x"),
])
def test_a_refused_login_gets_kafkas_code_and_message_then_the_connection_closes(
    emulators: dict[str, str], secure_broker: SecureBroker, mechanism: str, user: str, password: str
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        if mechanism == "PLAIN":
            answers = [wire.handshake("PLAIN"), wire.authenticate(plain_token(user, password))]
        else:
            answers = scram_login(wire, mechanism, user, password)
        return [summary(a) for a in answers] + [closed_or_open(wire)]

    outcome = both(emulators, secure_broker, "SASL_PLAINTEXT", scenario)
    message = "Authentication failed: Invalid username or password" if mechanism == "PLAIN" else \
        GENERIC.format(mechanism)
    assert outcome[-2] == ("SaslAuthenticateResponse", FAILED, message, ())
    assert outcome[-1] == "closed"


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "scram-sha-512"])
def test_an_unsupported_mechanism_is_answered_with_the_enabled_list_then_the_connection_closes(
    emulators: dict[str, str], secure_broker: SecureBroker, mechanism: str
) -> None:
    outcome = both(emulators, secure_broker, "SASL_PLAINTEXT",
                   lambda wire: [summary(wire.handshake(mechanism)), closed_or_open(wire)])
    assert outcome == [("SaslHandshakeResponse", 33, None, ENABLED), "closed"]


# -- the order of requests ------------------------------------------------------------------------------


def test_a_request_before_authentication_closes_the_connection_without_an_answer(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    outcome = both(emulators, secure_broker, "SASL_PLAINTEXT", lambda wire: [still_served(wire)])
    assert outcome == ["closed"]


def test_api_versions_is_answered_once_before_the_handshake_and_a_second_one_closes(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        first = wire.request(API_VERSIONS, 3, client_software_name="c1", client_software_version="1")
        try:
            wire.request(API_VERSIONS, 3, client_software_name="c1", client_software_version="1")
        except Closed:
            return [first.error_code, "closed"]
        return [first.error_code, "answered"]

    assert both(emulators, secure_broker, "SASL_PLAINTEXT", scenario) == [0, "closed"]


def test_another_request_between_handshake_and_authenticate_is_refused_with_illegal_sasl_state(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        from rebalance_lab.protocol import codec

        topic = codec.data_class(codec.request_type(METADATA), "MetadataRequestTopic")
        handshake = summary(wire.handshake("PLAIN"))
        answer = wire.request(METADATA, 12, topics=[topic(topic_id=None, name="t")],
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        return [handshake, [(t.name, t.error_code) for t in answer.topics], closed_or_open(wire)]

    outcome = both(emulators, secure_broker, "SASL_PLAINTEXT", scenario)
    assert outcome[1:] == [[("t", 34)], "closed"]


def test_handshake_v0_runs_raw_tokens_and_a_bad_one_closes_without_an_answer(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    def scenario(password: str) -> Scenario:
        def go(wire: Wire) -> list[Any]:
            handshake = summary(wire.handshake("PLAIN", version=0))
            return [handshake, wire.raw_token(plain_token("alice", password)), still_served(wire)]
        return go

    good = both(emulators, secure_broker, "SASL_PLAINTEXT", scenario("alice-secret"))
    assert good[1:] == [b"", "open"]
    assert both(emulators, secure_broker, "SASL_PLAINTEXT", scenario("wrong")) == ["closed"]


def test_raw_scram_tokens_after_handshake_v0_complete_a_login(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        wire.handshake("SCRAM-SHA-256", version=0)
        client = ScramClient(["SCRAM-SHA-256"], "bob", "bob-secret")
        client.set_server_first(wire.raw_token(client.get_client_first().encode()).decode())
        client.set_server_final(wire.raw_token(client.get_client_final().encode()).decode())
        return [still_served(wire)]

    assert both(emulators, secure_broker, "SASL_PLAINTEXT", scenario) == ["open"]


# -- after authentication, and on a listener without SASL (issue 17, defect 11) ------------------------------


def test_a_second_handshake_after_login_is_answered_illegal_sasl_state_and_the_connection_stays(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        scram_login(wire, "SCRAM-SHA-512", "alice", "alice-secret")
        return [summary(wire.handshake("PLAIN")), summary(wire.authenticate(b"x")), still_served(wire)]

    assert both(emulators, secure_broker, "SASL_PLAINTEXT", scenario) == [
        ("SaslHandshakeResponse", 34, None, ()),
        ("SaslAuthenticateResponse", 34, "SaslAuthenticate request received after successful authentication", ()),
        "open",
    ]


@pytest.mark.parametrize("version", [0, 1])
def test_a_sasl_client_on_the_plaintext_listener_gets_illegal_sasl_state_not_a_closed_connection(
    emulators: dict[str, str], secure_broker: SecureBroker, version: int
) -> None:
    def scenario(wire: Wire) -> list[Any]:
        return [summary(wire.handshake("SCRAM-SHA-512", version)), summary(wire.authenticate(b"n,,n=alice,r=x")),
                still_served(wire)]

    assert both(emulators, secure_broker, "PLAINTEXT", scenario) == [
        ("SaslHandshakeResponse", 34, None, ()),
        ("SaslAuthenticateResponse", 34, "SaslAuthenticate request received after successful authentication", ()),
        "open",
    ]


def test_a_frame_over_sasl_server_max_receive_size_before_login_closes_at_once(
    emulators: dict[str, str], secure_broker: SecureBroker
) -> None:
    """512 KiB (sasl.server.max.receive.size) bounds what an unauthenticated client can make the server buffer:
    the size prefix alone closes the connection, before the frame's bytes arrive."""
    def announce(size: int) -> Scenario:
        def go(wire: Wire) -> list[Any]:
            wire.sock.sendall(size.to_bytes(4, "big") + b"\x00\x11\x00\x01")  # the start of a SaslHandshake
            return [closed_or_open(wire)]
        return go

    assert both(emulators, secure_broker, "SASL_PLAINTEXT", announce(524_289)) == ["closed"]
    assert both(emulators, secure_broker, "SASL_PLAINTEXT", announce(524_288)) == ["open"]
