"""The emulator runs without any Kafka client library: kafka-python is an optional extra (issue 21).

Each check runs in a fresh interpreter in which ``import kafka`` fails, as in an environment that has none.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.packaging.dists import REPO_ROOT

_NO_KAFKA = "import sys\nsys.modules['kafka'] = None  # import kafka now raises ImportError\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _NO_KAFKA + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT)


def test_the_emulator_serves_a_join_and_its_answer_is_decoded_without_kafka_python() -> None:
    done = _run("""
        import socket, struct
        from rebalance_lab.api import Emulator
        from rebalance_lab.protocol import codec
        with Emulator(initial_rebalance_delay_ms=0) as emu:
            host, port = emu.bootstrap_servers.split(",")[0].rsplit(":", 1)
            protocol = codec.data_class(codec.request_type(11), "JoinGroupRequestProtocol")
            request = codec.new_request(11, 5, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                        member_id="", protocol_type="consumer",
                                        protocols=[protocol(name="range", metadata=b"")])
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(codec.encode_request(request, 1, "no-kafka"))
                size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
                answer = codec.decode_response(11, 5, sock.recv(size, socket.MSG_WAITALL))
        print("error", answer.error_code, "member", answer.member_id)
        print("kafka loaded:", any(name == "kafka" or name.startswith("kafka.") for name in sys.modules
                                   if sys.modules[name] is not None))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "error 79 member " in done.stdout  # MEMBER_ID_REQUIRED: KIP-394's first join, with a new member id
    assert "kafka loaded: False" in done.stdout


def test_the_kafka_python_adapter_says_which_extra_to_install() -> None:
    done = _run("import rebalance_lab.clients.adapters.kafka_python\n")
    assert done.returncode != 0
    assert "pip install 'rebalance-lab[clients]'" in done.stderr


def test_the_demo_says_which_extra_to_install() -> None:
    done = _run("from rebalance_lab.cli import main\nraise SystemExit(main(['demo', '--no-replay']))\n")
    assert done.returncode == 1
    assert "rebalance-lab: error: the demo runs real kafka-python consumers: pip install 'rebalance-lab[clients]'" \
        in done.stderr
