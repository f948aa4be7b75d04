"""``rebalance-lab serve --data-dir`` as a child process: started, killed with SIGKILL, started again."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServeProcess:
    """One ``serve`` process; ``start`` waits for its "listening" line (or fails with its output)."""

    def __init__(self, port: int, data_dir: Path, *extra: str) -> None:
        self.port = port
        self.args = [sys.executable, "-m", "rebalance_lab.cli", "serve", "--port", str(port), "--data-dir",
                     str(data_dir), "--initial-rebalance-delay-ms", "0", "--log-level", "INFO", *extra]
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = data_dir.parent / f"serve-{port}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        started = restart_count(self.output())
        out = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - the child owns it
        self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if restart_count(self.output()) > started:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"serve did not start:\n{self.output()[-3000:]}")

    def output(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no clean-up, no flush, as a crash."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def restart_count(text: str) -> int:
    return text.count("listening; bootstrap servers")
