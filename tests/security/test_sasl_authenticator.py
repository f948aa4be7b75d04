"""The SASL authenticator without sockets: frames in, steps out (rebalance_lab/security/sasl.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from scramp import ScramClient

from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.coordinator.handlers.errors_response import error_response
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.protocol.versions import VersionTable
from rebalance_lab.security.listeners import ListenerConfigError, ListenerSecurity
from rebalance_lab.security.sasl import SaslAuthenticator, State, Step
from rebalance_lab.security.users import UsersError, UserStore, read_users_file

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
USERS = UserStore.build([("alice", "alice-secret")], MECHANISMS)
VERSIONS = VersionTable({18: (0, 4), 17: (0, 1), 36: (0, 2), 3: (0, 13)})
load_handlers()  # registers the APIs' own error-response builders (Metadata's names each topic)


def authenticator() -> SaslAuthenticator:
    return SaslAuthenticator(MECHANISMS, USERS, VERSIONS, error_response)


def frame(api_key: int, version: int, **fields: Any) -> bytes:
    return codec.encode_request(codec.new_request(api_key, version, **fields), 7)[4:]


def answer(step: Step, api_key: int, version: int) -> Any:
    assert step.reply is not None
    return codec.decode_response(api_key, version, step.reply[4:])


def test_an_api_versions_request_before_the_handshake_goes_to_the_handlers_once() -> None:
    auth = authenticator()
    assert auth.receive(frame(18, 3, client_software_name="x", client_software_version="1")).passthrough
    second = auth.receive(frame(18, 3, client_software_name="x", client_software_version="1"))
    assert second.close and second.reply is None


def test_an_unsupported_api_versions_version_may_be_retried() -> None:
    auth = authenticator()
    assert auth.receive(frame(18, 0)[:2] + b"\x00\x63" + frame(18, 0)[4:]).passthrough  # v99: KIP-511 answer
    assert auth.receive(frame(18, 0)).passthrough
    assert auth.state is State.HANDSHAKE


def test_a_request_before_authentication_closes_the_connection_without_an_answer() -> None:
    step = authenticator().receive(frame(3, 12, topics=None, allow_auto_topic_creation=False))
    assert step.close and step.reply is None
    assert step.reason == "Unexpected Kafka request of type METADATA during SASL handshake."


def test_bytes_that_are_not_a_kafka_request_close_the_connection() -> None:
    step = authenticator().receive(b"\x60\x82\x01\x00garbage")
    assert step.close and step.reply is None


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_and_the_connection_closes() -> None:
    step = authenticator().receive(frame(17, 1, mechanism="GSSAPI"))
    assert step.close
    response = answer(step, 17, 1)
    assert (response.error_code, response.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, list(MECHANISMS))


def _plain(auth: SaslAuthenticator, password: str, version: int = 2) -> Step:
    assert not auth.receive(frame(17, 1, mechanism="PLAIN")).close
    return auth.receive(frame(36, version, auth_bytes=f"\0alice\0{password}".encode()))


def test_plain_with_the_right_password_completes_as_user_alice() -> None:
    auth = authenticator()
    step = _plain(auth, "alice-secret")
    assert not step.close and answer(step, 36, 2).error_code == 0
    assert auth.complete and auth.username == "alice"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_with_a_wrong_password_is_answered_with_kafkas_message_then_closed(version: int) -> None:
    auth = authenticator()
    step = _plain(auth, "wrong", version)
    response = answer(step, 36, version)
    assert step.close and auth.username is None
    assert (response.error_code, response.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")


def test_plain_tokens_of_the_wrong_shape_are_named_as_plain_sasl_server_names_them() -> None:
    auth = authenticator()
    auth.receive(frame(17, 1, mechanism="PLAIN"))
    step = auth.receive(frame(36, 2, auth_bytes=b"alice"))
    assert answer(step, 36, 2).error_message == "Invalid SASL/PLAIN response: expected 3 tokens, got 1"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_completes_in_two_rounds_and_the_server_signature_checks_out(mechanism: str) -> None:
    auth = authenticator()
    auth.receive(frame(17, 1, mechanism=mechanism))
    client = ScramClient([mechanism], "alice", "alice-secret")
    first = answer(auth.receive(frame(36, 2, auth_bytes=client.get_client_first().encode())), 36, 2)
    client.set_server_first(first.auth_bytes.decode())
    final = answer(auth.receive(frame(36, 2, auth_bytes=client.get_client_final().encode())), 36, 2)
    client.set_server_final(final.auth_bytes.decode())
    assert auth.complete and auth.username == "alice"


@pytest.mark.parametrize(("user", "password", "rounds"), [("alice", "wrong", 2), ("mallory", "x", 1)])
def test_scram_failures_get_the_generic_message_that_hides_whether_the_user_exists(
    user: str, password: str, rounds: int
) -> None:
    auth = authenticator()
    auth.receive(frame(17, 1, mechanism="SCRAM-SHA-512"))
    client = ScramClient(["SCRAM-SHA-512"], user, password)
    step = auth.receive(frame(36, 2, auth_bytes=client.get_client_first().encode()))
    if rounds == 2:
        client.set_server_first(answer(step, 36, 2).auth_bytes.decode())
        step = auth.receive(frame(36, 2, auth_bytes=client.get_client_final().encode()))
    assert step.close
    assert answer(step, 36, 2).error_message == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")


def test_handshake_v0_exchanges_raw_tokens_without_kafka_headers() -> None:
    auth = authenticator()
    assert answer(auth.receive(frame(17, 0, mechanism="PLAIN")), 17, 0).error_code == 0
    step = auth.receive(b"\0alice\0alice-secret")
    assert step.reply == b"\0\0\0\0" and auth.complete  # PlainSaslServer's empty challenge, size-prefixed


def test_a_failed_raw_token_closes_without_an_answer() -> None:
    auth = authenticator()
    auth.receive(frame(17, 0, mechanism="PLAIN"))
    step = auth.receive(b"\0alice\0nope")
    assert step.close and step.reply is None


def test_another_request_during_the_exchange_gets_its_own_error_response_with_illegal_sasl_state() -> None:
    auth = authenticator()
    auth.receive(frame(17, 1, mechanism="PLAIN"))
    topic = codec.data_class(codec.request_type(3), "MetadataRequestTopic")
    step = auth.receive(frame(3, 12, topics=[topic(name="t", topic_id=None)], allow_auto_topic_creation=False))
    assert step.close
    assert step.reason == "Unexpected Kafka request of type METADATA during SASL authentication."
    assert [t.error_code for t in answer(step, 3, 12).topics] == [ErrorCode.ILLEGAL_SASL_STATE]


def test_users_file_reads_json_and_name_password_lines(tmp_path: Any) -> None:
    lines = tmp_path / "users.txt"
    lines.write_text("# comment\nalice:a:b\n\nbob:pw\n")
    data = tmp_path / "users.json"
    data.write_text('{"carol": "c"}')
    assert read_users_file(lines) == [("alice", "a:b"), ("bob", "pw")]
    assert read_users_file(data) == [("carol", "c")]
    lines.write_text("nocolon\n")
    with pytest.raises(UsersError, match="line 1"):
        read_users_file(lines)


class _Options:
    listener = "SASL_SSL"
    sasl_mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",)
    users: tuple[str, ...] = ("alice:pw",)
    users_file = None
    ssl_certfile = None
    ssl_keyfile = None
    ssl_cafile = None
    additional_listeners: tuple[str, ...] = ()


def test_listener_options_that_do_not_fit_together_are_refused_with_a_reason() -> None:
    with pytest.raises(ListenerConfigError, match="needs --ssl-certfile"):
        ListenerSecurity.build(_Options())
    options = _Options()
    options.listener, options.users = "SASL_PLAINTEXT", ()
    with pytest.raises(ListenerConfigError, match="at least one --user"):
        ListenerSecurity.build(options)
    options.listener = "PLAINTEXT"
    with pytest.raises(ListenerConfigError, match="--sasl-mechanism needs"):
        ListenerSecurity.build(options)


def _mutated(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.4 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice < 0.7:
            out = out[: rng.randrange(len(out) + 1)]
        else:
            out += rng.randbytes(rng.randint(1, 8))
    return bytes(out)


def test_damaged_frames_at_any_step_get_a_step_never_an_exception() -> None:
    """Bounded, seeded fuzz: ApiVersions, SaslHandshake v0/v1 and SaslAuthenticate frames, each damaged at random."""
    rng = random.Random(17)
    outcomes = {"passthrough": 0, "answered": 0, "closed": 0}
    for _ in range(3000):
        auth = authenticator()
        mechanism = rng.choice(MECHANISMS)
        first = b"\0alice\0alice-secret" if mechanism == "PLAIN" else \
            ScramClient([mechanism], "alice", "alice-secret").get_client_first().encode()
        frames = [frame(18, 3, client_software_name="x", client_software_version="1"),
                  frame(17, rng.choice([0, 1]), mechanism=mechanism), frame(36, 2, auth_bytes=first),
                  frame(36, 2, auth_bytes=b"c=biws,r=nonce,p=proof")]
        for data in frames:
            step = auth.receive(_mutated(rng, data) if rng.random() < 0.5 else data)
            outcomes["closed" if step.close else "passthrough" if step.passthrough else "answered"] += 1
            if step.close:
                break
    assert all(outcomes.values()), outcomes  # every kind of step was reached
