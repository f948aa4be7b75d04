"""Run cases through Kafka's own Java classes (the oracle of the differential tests).

The Maven project in ``tests/java`` builds a small driver (``dev.rebalancelab.oracle.Driver``)
on top of Kafka's jars from Maven Central: kafka-clients 4.4.0 (murmur2, partitioners, the
four assignors), kafka-metadata 4.4.0 (``StripedReplicaPlacer``) and kafka-server-common 3.9.2
(``AdminUtils``, deleted in 4.0). One JVM serves a whole pytest session over JSON lines.

    oracle = JavaOracle.start()          # builds the driver if needed
    oracle.run({"kind": "murmur2", "key": "3231"})          # -> -973932308
    oracle.run_many([...])                                  # -> [result-or-OracleError, ...]

Case formats (``id`` is added by this module):

* ``{"kind": "murmur2", "key": hex}`` -> int (signed)
* ``{"kind": "partition", "key": hex, "num_partitions": n}`` -> int
* ``{"kind": "roundrobin_partitioner", "num_partitions": n, "available": [ids], "calls": k}``
  -> [partition, ...]
* ``{"kind": "hashmap_order", "keys": [str, ...]}`` -> keys in Java ``HashMap`` order
* ``{"kind": "adminutils" | "striped", "brokers": [{"id", "rack", "fenced"}], "seed": int,
  "random": "java" | "mock", "requests": [{"partitions", "rf", "fixed_start_index",
  "start_partition_id"}]}`` -> per request ``{"replicas": [[...]]}`` or ``{"error": {...}}``;
  all requests share one ``Random``
* ``{"kind": "assign", "assignor": name, "brokers": [{"id", "rack"}], "topics": [{"name",
  "partitions": [[replica ids], ...]}], "members": [{"id", "topics", "user_data": hex|null,
  "owned": [[topic, p]], "generation", "rack", "instance_id"}]}`` -> {member: [[topic, p]]}

* ``{"kind": "server_assign", ...}`` -> the KIP-848 ``uniform``/``range`` assignors of
  kafka-group-coordinator 4.4.0 (format in ``ServerAssign.java``); ``{"kind": "timeline_order",
  "ops": [["put" | "remove", key], ...]}`` -> a ``TimelineHashMap``'s key order

A Java exception comes back as :class:`OracleError` (its ``type`` is the Java simple class name).

Build: ``mvn -q -B -o package`` in ``tests/java`` (offline first, so a warm ``~/.m2`` needs no
network), falling back to ``mvn -q -B package``. Set ``REBALANCE_LAB_JAVA_ORACLE_REBUILD=1`` to
force a rebuild.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

JAVA_PROJECT = Path(__file__).resolve().parent / "java"
_TARGET = JAVA_PROJECT / "target"
_DRIVER_CLASS = "dev.rebalancelab.oracle.Driver"


class OracleUnavailable(RuntimeError):
    """Java or Maven is missing, or the driver does not build."""


class OracleError(Exception):
    """Kafka's Java code threw for this case."""

    def __init__(self, java_type: str, message: str | None) -> None:
        super().__init__(f"{java_type}: {message}")
        self.java_type = java_type
        self.java_message = message


def _sources() -> Iterator[Path]:
    yield JAVA_PROJECT / "pom.xml"
    yield from (JAVA_PROJECT / "src").rglob("*.java")


def _is_built() -> bool:
    marker = _TARGET / "classpath.txt"
    jar = _TARGET / "adminutils" / "kafka-server-common-adminutils.jar"
    driver = _TARGET / "classes" / "dev" / "rebalancelab" / "oracle" / "Driver.class"
    if not (marker.exists() and jar.exists() and driver.exists()):
        return False
    built = min(marker.stat().st_mtime, driver.stat().st_mtime)
    return all(src.stat().st_mtime <= built for src in _sources())


def build_driver() -> None:
    """Build ``tests/java`` with Maven unless it is up to date."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        raise OracleUnavailable("java and mvn must be on PATH")
    if _is_built() and not os.environ.get("REBALANCE_LAB_JAVA_ORACLE_REBUILD"):
        return
    base = ["mvn", "-q", "-B", "-Dstyle.color=never"]
    errors = []
    for extra in (["-o"], []):
        done = subprocess.run([*base, *extra, "package"], cwd=JAVA_PROJECT, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        errors.append(done.stdout[-4000:] + done.stderr[-4000:])
    raise OracleUnavailable("mvn package failed:\n" + "\n---\n".join(errors))


def java_command() -> list[str]:
    classpath = (_TARGET / "classpath.txt").read_text().strip()
    return [
        "java",
        "-XX:+UseSerialGC",
        f"-Doracle.adminutils.jar={_TARGET / 'adminutils' / 'kafka-server-common-adminutils.jar'}",
        "-cp",
        os.pathsep.join([str(_TARGET / "classes"), classpath]),
        _DRIVER_CLASS,
    ]


class JavaOracle:
    """A running driver process. Not thread-safe: one caller at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process
        self._next_id = 0
        self.calls = 0

    @classmethod
    def start(cls) -> JavaOracle:
        build_driver()
        process = subprocess.Popen(
            java_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1 << 16,
        )
        oracle = cls(process)
        if oracle.run({"kind": "ping"}) != "pong":
            oracle.close()
            raise OracleUnavailable("driver did not answer ping")
        return oracle

    def run(self, case: dict[str, Any]) -> Any:
        """Answer one case; raises :class:`OracleError` if Java threw."""
        result = self.run_many([case])[0]
        if isinstance(result, OracleError):
            raise result
        return result

    def run_many(self, cases: Iterable[dict[str, Any]]) -> list[Any]:
        """Answer many cases in one stream; Java exceptions are returned as :class:`OracleError`.

        A writer thread feeds stdin while this thread reads stdout, so neither pipe can fill
        up and deadlock the two processes.
        """
        lines = []
        first = self._next_id
        for case in cases:
            lines.append(json.dumps({**case, "id": self._next_id}, separators=(",", ":")))
            self._next_id += 1
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        failure: list[BaseException] = []

        def write() -> None:
            try:
                for line in lines:
                    stdin.write(line + "\n")
                stdin.flush()
            except BaseException as exc:  # surfaced below, after the reader gives up
                failure.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        results = [self._read_one(stdout, first + i) for i in range(len(lines))]
        writer.join()
        if failure:
            raise OracleUnavailable(f"writing to the driver failed: {failure[0]!r}")
        self.calls += len(lines)
        return results

    def _read_one(self, stdout: Any, expected_id: int) -> Any:
        line = stdout.readline()
        if not line:
            raise OracleUnavailable(f"driver exited (code {self._process.poll()})")
        reply = json.loads(line)
        if reply.get("id") != expected_id:
            raise OracleUnavailable(f"out-of-order reply {reply.get('id')} (expected {expected_id})")
        if "error" in reply:
            return OracleError(reply["error"]["type"], reply["error"].get("message"))
        return reply["result"]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def minimal_case_json(case: dict[str, Any]) -> str:
    """One-line JSON of a case, for failure messages (paste it into ``oracle.run``)."""
    return json.dumps({k: v for k, v in case.items() if k != "id"}, separators=(",", ":"), ensure_ascii=False)
