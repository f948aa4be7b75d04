"""A real Java consumer in the evidence scenario, and its client log (issue 20 items 1 and 5).

Kafka's own console consumer (``org.apache.kafka.tools.consumer.ConsoleConsumer`` of kafka-tools
4.4.0, a kafka-clients 4.4.0 ``KafkaConsumer``) runs in a JVM with log4j2 at INFO and Kafka's log
pattern ``[%d] %p %m (%c)%n`` writing to a file: the client log a Java application leaves. Its
classpath comes from ``java_client/pom.xml`` (Maven Central; offline first, so a warm ``~/.m2``
needs no network); Java and Maven must be on PATH.

:func:`run_java_history`: the Java member ``j`` starts the group and leads it while kafka-python
members ``p`` and ``q`` join and leave; the Java log and the kafka-python records are returned.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.replay_evidence.scenario import Process

PROJECT = Path(__file__).resolve().parent / "java_client"
CLASSPATH_FILE = PROJECT / "target" / "classpath.txt"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
WAIT_S = 60.0


def classpath() -> str:
    """kafka-tools 4.4.0 and log4j2's slf4j binding, resolved by Maven once (kept in ``target/``)."""
    pom = PROJECT / "pom.xml"
    if CLASSPATH_FILE.exists() and CLASSPATH_FILE.stat().st_mtime >= pom.stat().st_mtime:
        return CLASSPATH_FILE.read_text().strip()
    if shutil.which("java") is None or shutil.which("mvn") is None:
        raise RuntimeError("java and mvn must be on PATH for the Java client")
    errors = []
    for extra in (["-o"], []):
        done = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", *extra, "dependency:build-classpath",
                               f"-Dmdep.outputFile={CLASSPATH_FILE}"], cwd=PROJECT, capture_output=True, text=True,
                              check=False)
        if done.returncode == 0 and CLASSPATH_FILE.exists():
            return CLASSPATH_FILE.read_text().strip()
        errors.append(done.stdout[-2000:] + done.stderr[-2000:])
    raise RuntimeError("mvn dependency:build-classpath failed:\n" + "\n---\n".join(errors))


class JavaConsumer:
    """The console consumer as a classic-protocol group member (range), logging to ``log``."""

    def __init__(self, bootstrap: str, group: str, topic: str, log: Path, client_id: str = "j") -> None:
        self.log = log
        properties = {"client.id": client_id, "group.protocol": "classic", "session.timeout.ms": "6000",
                      "heartbeat.interval.ms": "500", "max.poll.interval.ms": "15000",
                      "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"}
        config = PROJECT / "log4j2.properties"
        command = ["java", "-Xmx192m", "-XX:+UseSerialGC", f"-Dlog4j2.configurationFile={config}",
                   f"-Dclient.log={log}", "-cp", classpath(), CONSOLE_CONSUMER, "--bootstrap-server", bootstrap,
                   "--topic", topic, "--group", group]
        for key, value in properties.items():
            command += ["--consumer-property", f"{key}={value}"]
        self.popen = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def synced(self) -> list[int]:
        """The generations this consumer's log says it synced."""
        text = self.log.read_text() if self.log.exists() else ""
        marker = "Successfully synced group in generation Generation{generationId="
        return [int(line.split(marker, 1)[1].split(",", 1)[0]) for line in text.splitlines() if marker in line]

    def stop(self) -> None:
        """SIGTERM: the console consumer's shutdown hook closes the consumer, which leaves the group."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


@dataclass
class JavaHistory:
    group: str
    log: Path
    records: list[dict[str, Any]] = field(default_factory=list)  # the kafka-python members' reports
    generations: list[int] = field(default_factory=list)  # the generations the Java consumer synced


def _wait(what: str, done: Any, java: JavaConsumer) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if done():
            return
        if java.popen.poll() is not None:
            raise AssertionError(f"the Java consumer exited: {java.popen.stderr.read() if java.popen.stderr else ''}")
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen; the Java consumer synced {java.synced()}")


def run_java_history(bootstrap: str, group: str, topic: str, log: Path) -> JavaHistory:
    """j joins (and leads), p joins, p leaves, q joins, q leaves, j closes: five generations."""
    java = JavaConsumer(bootstrap, group, topic, log)
    members: list[Process] = []
    try:
        _wait("j's first generation", lambda: java.synced(), java)
        for name in ("p", "q"):
            spec = {"bootstrap": bootstrap, "group": group, "topic": topic, "client_id": name, "instance_id": None,
                    "strategies": ["range"]}
            member = Process(name, spec)
            members.append(member)
            before = max(java.synced())
            _wait(f"{name} joins", lambda m=member, b=before: m.last() is not None and max(java.synced()) > b, java)
            before = max(java.synced())
            member.stop()
            _wait(f"{name} leaves", lambda b=before: max(java.synced()) > b, java)
    finally:
        for member in members:
            member.stop(signal.SIGKILL)
        java.stop()
    time.sleep(0.5)
    records = sorted((r for m in members for r in m.records if r["ev"] == "assigned"), key=lambda r: r["t"])
    return JavaHistory(group, log, records, java.synced())
