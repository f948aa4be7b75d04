"""A Spark standalone cluster on loopback for one test: a master and one worker started from pyspark's own jars.

Both run in their own process groups, so :meth:`StandaloneCluster.stop` ends each with the
executors it launched, and a failed start leaves nothing behind either. Readiness comes from
the master's JSON status page (``/json/``), not from sleeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


class StandaloneCluster:
    def __init__(self, directory: Path, *, cores: int = 1, memory: str = "1g") -> None:
        self.directory = directory
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.worker_ui_port = free_port()
        self.work_dir = directory / "worker"
        self._processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
        env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=LOOPBACK, SPARK_NO_DAEMONIZE="1")
        return env

    def _start(self, name: str, *args: str) -> None:
        log = (self.directory / f"{name}.log").open("wb")
        process = subprocess.Popen([str(SPARK_CLASS), *args], stdout=log, stderr=subprocess.STDOUT,
                                   env=self._env(), start_new_session=True)
        self._processes.append((process, log))

    def start(self, timeout_s: float = 180.0) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                        "--port", str(self.port), "--webui-port", str(self.ui_port))
            self._wait(lambda status: status is not None, timeout_s, "the master to serve its status page")
            self._start("worker", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", LOOPBACK,
                        "--cores", str(self.cores), "--memory", self.memory,
                        "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.work_dir))
            self._wait(lambda status: status is not None and status.get("aliveworkers", 0) >= 1, timeout_s,
                       "the worker to register with the master")
        except BaseException:
            self.stop()
            raise
        return self

    def status(self) -> dict[str, Any] | None:
        """The master's JSON status, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=5) as response:
                status: dict[str, Any] = json.load(response)
                return status
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def _wait(self, ready: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready(self.status()):
                return
            exited = [p for p, _ in self._processes if p.poll() is not None]
            if exited:
                raise RuntimeError(f"a Spark process exited (code {exited[0].returncode}) while waiting for {what}:\n"
                                   + self.logs())
            time.sleep(0.5)
        raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}:\n" + self.logs())

    def logs(self, tail: int = 3000) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-tail:]}"
                         for p in sorted(self.directory.glob("*.log")))

    def stop(self) -> None:
        """Worker first (it kills its executors), then the master; SIGKILL for anything that lingers."""
        for process, log in reversed(self._processes):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)
            with contextlib.suppress(ProcessLookupError):  # executors the worker started, if any remain
                os.killpg(process.pid, signal.SIGKILL)
            log.close()
        self._processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
