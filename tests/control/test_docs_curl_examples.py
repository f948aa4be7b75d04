"""The curl examples of docs/control-api.md still work against the guarded endpoint (loopback Host, JSON bodies,
a token): each command of the "Example (curl)" block runs, as written, against ``serve --control-port``."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kip848_light import LightConsumer

DOC = Path(__file__).resolve().parents[2] / "docs" / "control-api.md"


def curl_commands() -> list[str]:
    block = DOC.read_text().split("## Example (curl)", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("curl ")]


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, str | None]]:
    """``serve --control-port 0`` (with a token when parametrized with one): (bootstrap, control URL, token)."""
    token: str | None = getattr(request, "param", None)
    extra = ["--control-token", token] if token else []
    proc = subprocess.Popen([sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", "0", "--topic", "orders:2",
                             "--control-port", "0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().split("bootstrap servers: ")[1].strip()
        control = proc.stdout.readline().strip().removeprefix("control endpoint: ")
        yield bootstrap, control, token
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def run(command: str, control: str, token: str | None = None) -> str:
    """The doc's command with the served port (and the token header); the pipe to jq/grep kept."""
    port = control.rsplit(":", 1)[1]
    command = command.replace("localhost:8085", f"localhost:{port}")
    if token:
        command = command.replace("curl -s", f"curl -s -H 'Authorization: Bearer {token}'", 1)
    command = command.replace("curl -s", "curl -s -w '\\n%{http_code}'", 1) if "|" not in command else command
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, (command, result.stderr)
    return result.stdout


@pytest.mark.parametrize("served", [None, "s3cret"], indirect=True)
async def test_every_curl_example_of_the_control_api_doc_is_answered(served: tuple[str, str, str | None]) -> None:
    assert shutil.which("curl") and shutil.which("jq"), "the doc's examples need curl and jq"
    bootstrap, control, token = served
    member = await LightConsumer(bootstrap, "billing", ["orders"], client_id="doc").open()
    try:
        await member.heartbeat()  # "billing" is now a KIP-848 consumer group, as the examples assume
        commands = curl_commands()
        assert len(commands) >= 6
        for command in commands:
            out = run(command, control, token)
            if "|" not in command:
                status = out.rsplit("\n", 1)[1]
                assert re.fullmatch(r"2\d\d", status), (command, out)
    finally:
        await member.close()
