"""``rebalance-lab serve`` with a security listener, as the README's "Security listeners" section runs it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.secure_broker import Pki

EXE = str(Path(sys.executable).with_name("rebalance-lab"))
BOOTSTRAP = re.compile(r"bootstrap servers: (\S+)")


def test_serve_sasl_ssl_with_scram_users_from_a_file_serves_kafka_python(pki: Pki, tmp_path: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    users = tmp_path / "users.txt"
    users.write_text("# NAME:PASSWORD, one a line\nalice:alice-secret\n")
    proc = subprocess.Popen(
        [EXE, "serve", "--port", "0", "--topic", "orders:2", "--initial-rebalance-delay-ms", "0",
         "--listener", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-mechanism", "PLAIN",
         "--users-file", str(users), "--user", "bob:bob-secret",
         "--ssl-certfile", pki.cert_file, "--ssl-keyfile", pki.key_file],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        match = BOOTSTRAP.search(proc.stdout.readline())
        assert match
        settings = {"bootstrap_servers": match.group(1), "security_protocol": "SASL_SSL", "ssl_cafile": pki.ca_file,
                    "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
                    "sasl_plain_password": "alice-secret"}
        producer = KafkaProducer(**settings)
        producer.send("orders", b"one", partition=0).get(30)
        producer.close()
        consumer = KafkaConsumer("orders", group_id="g", auto_offset_reset="earliest", consumer_timeout_ms=20_000,
                                 **{**settings, "sasl_mechanism": "PLAIN", "sasl_plain_username": "bob",
                                    "sasl_plain_password": "bob-secret"})
        assert next(iter(consumer)).value == b"one"
        consumer.close()
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--listener", "SASL_SSL", "--user", "a:b"], "needs --ssl-certfile"),
    (["--listener", "SASL_PLAINTEXT"], "at least one --user"),
    (["--sasl-mechanism", "PLAIN", "--user", "a:b"], "--sasl-mechanism needs"),
    (["--listener", "SASL_PLAINTEXT", "--user", "nopassword"], "is not NAME:PASSWORD"),
    (["--listener", "SASL_PLAINTEXT", "--users-file", "/nonexistent/users"], "cannot read users file"),
    (["--listener", "SSL", "--ssl-certfile", "/nonexistent/cert.pem"], "cannot load the certificate"),
    (["--listener", "KERBEROS"], "invalid choice"),
])
def test_security_options_that_cannot_work_are_a_one_line_error_with_exit_code_2(
    args: list[str], message: str
) -> None:
    result = subprocess.run([EXE, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr
