"""Building and running the matrix drivers, and watching what they consume.

Every driver in ``tests/matrix/drivers`` is one consumer-group member per process and speaks
the protocol described in ``drivers/member_io.py``: JSON lines on stdout, ``close`` on stdin.
The builds are cached (``node_modules/``, ``target/``, ``bin/``, each rebuilt only when its
inputs are newer) and need only the registries: npm, Maven Central, the Go module proxy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

DRIVERS = Path(__file__).resolve().parent / "drivers"
REPO_ROOT = Path(__file__).resolve().parents[2]
REBUILD = "REBALANCE_LAB_MATRIX_REBUILD"  # set to force every build


class ToolchainMissing(RuntimeError):
    """node/npm, java/mvn or go is not on PATH."""


class BuildFailed(RuntimeError):
    pass


def _require(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise ToolchainMissing(f"{', '.join(missing)} not on PATH")


def _up_to_date(outputs: Iterable[Path], inputs: Iterable[Path]) -> bool:
    if os.environ.get(REBUILD):
        return False
    outs = list(outputs)
    if not all(out.exists() for out in outs):
        return False
    built = min(out.stat().st_mtime for out in outs)
    return all(src.stat().st_mtime <= built for src in inputs)


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, timeout=900)


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise BuildFailed(f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def build_kafkajs() -> list[str]:
    _require("node", "npm")
    root = DRIVERS / "kafkajs"
    if not _up_to_date([root / "node_modules" / ".package-lock.json"], [root / "package-lock.json"]):
        _check(_run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], root), "npm ci")
    return ["node", str(root / "driver.js")]


def build_java() -> list[str]:
    _require("java", "mvn")
    root = DRIVERS / "java"
    target = root / "target"
    member = target / "classes" / "dev" / "rebalancelab" / "matrix" / "Member.class"
    if not _up_to_date([target / "classpath.txt", member], [root / "pom.xml", *(root / "src").rglob("*.java")]):
        errors = []
        for extra in (["-o"], []):  # offline first: a warm ~/.m2 needs no network
            done = _run(["mvn", "-q", "-B", "-Dstyle.color=never", *extra, "package"], root)
            if done.returncode == 0:
                break
            errors.append(done.stdout[-3000:] + done.stderr[-3000:])
        else:
            raise BuildFailed("mvn package failed:\n" + "\n---\n".join(errors))
    classpath = os.pathsep.join([str(target / "classes"), (target / "classpath.txt").read_text().strip()])
    # Three JVMs share two cores: the client compiler and a small heap start them quickest.
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath,
            "dev.rebalancelab.matrix.Member"]


def build_franz_go() -> list[str]:
    _require("go")
    root = DRIVERS / "franz_go"
    binary = root / "bin" / "franz-go-driver"
    if not _up_to_date([binary], [root / "go.mod", root / "go.sum", *root.glob("*.go")]):
        _check(_run(["go", "build", "-buildvcs=false", "-o", str(binary), "."], root), "go build")
    return [str(binary)]


def python_driver(package: str) -> Callable[[], list[str]]:
    def build() -> list[str]:
        return [sys.executable, "-m", f"tests.matrix.drivers.{package}.driver"]

    return build


@dataclass
class Member:
    """One driver process: one group member."""

    name: str
    process: subprocess.Popen[str]
    stderr_path: Path
    on_records: Callable[[list[tuple[int, int]]], None]
    events: list[dict[str, Any]] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    owned: set[int] = field(default_factory=set)
    started: dict[str, Any] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: threading.Thread | None = None  # reads the driver's stdout into events until the pipe closes

    @classmethod
    def spawn(cls, name: str, command: list[str], stderr_path: Path,
              on_records: Callable[[list[tuple[int, int]]], None]) -> Member:
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                       text=True, cwd=REPO_ROOT, bufsize=1)
        member = cls(name, process, stderr_path, on_records)
        member._reader = threading.Thread(target=member._read, args=(process.stdout,), name=f"driver-{name}",
                                          daemon=True)
        member._reader.start()
        return member

    def _read(self, stdout: IO[str] | None) -> None:
        assert stdout is not None
        for line in stdout:
            try:
                event = json.loads(line)
            except ValueError:
                self.noise.append(line.rstrip())
                continue
            try:
                self._on_event(event)
            except (AttributeError, KeyError, TypeError, ValueError):  # keep reading: a stuck pipe blocks the driver
                self.noise.append(line.rstrip())

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        partitions = set(event.get("partitions") or ())
        with self._lock:
            if kind != "records":
                self.events.append(event)
            if kind == "started":
                self.started = event
            elif kind == "assignment":  # the whole assignment (kafkajs)
                self.owned = partitions
            elif kind == "assigned":  # newly added (cooperative) or everything (eager, after a revoke of all)
                self.owned |= partitions
            elif kind in ("revoked", "lost"):
                self.owned -= partitions
        if kind == "records":
            self.on_records([(int(p), int(o)) for p, o in event["records"]])

    def owned_now(self) -> set[int]:
        with self._lock:
            return set(self.owned)

    def has_event(self, kind: str) -> bool:
        with self._lock:
            return any(e.get("event") == kind for e in self.events)

    def errors(self) -> list[str]:
        with self._lock:
            return [str(e.get("error")) for e in self.events if e.get("event") == "error"]

    def close(self, timeout: float) -> int:
        """Ask the member to leave the group cleanly; its exit code, once every line it printed was read.

        The process can exit before the reading thread has taken its last lines from the pipe (its "closed"
        event): a loaded CI machine showed "member c did not report closing" for a member whose events, read a
        moment later, ended with it. The thread ends at the pipe's end, which the exit brings."""
        assert self.process.stdin is not None
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        code = self.process.wait(timeout)
        if self._reader is not None:
            self._reader.join(timeout)
        return code

    def crash(self) -> None:
        """SIGKILL: no LeaveGroup, no commit; the coordinator finds out when the session times out."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def dump_stacks(self) -> None:
        """Ask a running Python driver to print every thread's stack to its stderr (faulthandler)."""
        if self.process.poll() is None and "-m" in self.process.args:  # type: ignore[operator]
            self.process.send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if self.process.stdin is not None:
            self.process.stdin.close()

    def diagnostics(self) -> str:
        stderr = self.stderr_path.read_text(errors="replace")[-6000:] if self.stderr_path.exists() else ""
        with self._lock:
            events = [e for e in self.events if e.get("event") != "records"][-15:]
        return (f"--- member {self.name} (exit {self.process.poll()}) events: {events}\n"
                f"non-JSON stdout: {self.noise[-10:]}\nstderr tail:\n{stderr}")


def wait_until(predicate: Callable[[], bool], timeout: float, what: Callable[[], str]) -> float:
    """Poll ``predicate``; the seconds it took, or AssertionError with ``what()``."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"after {timeout:.0f}s: {what()}")
        time.sleep(0.05)
    return time.monotonic() - start
