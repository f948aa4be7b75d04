"""``rebalance-lab serve --control-port``: the endpoint next to a served emulator; non-loopback refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serve_with_a_control_port_prints_its_url_and_answers_json() -> None:
    proc = serve("--control-port", "0", "--brokers", "2")
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].strip().removeprefix("control endpoint: ")
        assert url.startswith("http://127.0.0.1:"), lines
        with urllib.request.urlopen(url + "/brokers", timeout=10) as response:
            assert [b["node_id"] for b in json.load(response)] == [0, 1]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def test_serve_refuses_a_control_endpoint_on_a_non_loopback_host() -> None:
    proc = serve("--control-port", "0", "--control-host", "0.0.0.0")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "loopback only" in err
