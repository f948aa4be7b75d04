"""Apache Kafka's ``kafka-dump-log`` (``org.apache.kafka.tools.DumpLogSegments``) run on this machine.

The broker images the tests build hold the broker's jars only, and the official image keeps its
tools in another place; so a segment is copied out of the broker's container and dumped here,
with the tools of ``tests/java/kafka-tools/pom.xml`` (Maven Central; offline first, so a warm
``~/.m2`` needs no network). Needs ``java`` and ``mvn`` on PATH.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1] / "java" / "kafka-tools"
CLASSPATH_FILE = PROJECT / "target" / "classpath.txt"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"


class ToolsUnavailable(RuntimeError):
    """Java or Maven is missing, or Kafka's tools could not be resolved."""


def classpath() -> str:
    """The tools' classpath, resolved by Maven once (kept in ``target/``)."""
    pom = PROJECT / "pom.xml"
    if CLASSPATH_FILE.exists() and CLASSPATH_FILE.stat().st_mtime >= pom.stat().st_mtime:
        return CLASSPATH_FILE.read_text().strip()
    if shutil.which("java") is None or shutil.which("mvn") is None:
        raise ToolsUnavailable("java and mvn must be on PATH")
    command = ["mvn", "-q", "-B", "-Dstyle.color=never", "dependency:build-classpath",
               f"-Dmdep.outputFile={CLASSPATH_FILE}"]
    errors = []
    for extra in (["-o"], []):
        done = subprocess.run([*command[:4], *extra, *command[4:]], cwd=PROJECT, capture_output=True, text=True,
                              check=False)
        if done.returncode == 0 and CLASSPATH_FILE.exists():
            return CLASSPATH_FILE.read_text().strip()
        errors.append(done.stdout[-3000:] + done.stderr[-3000:])
    raise ToolsUnavailable("mvn dependency:build-classpath failed:\n" + "\n---\n".join(errors))


def dump_log(segment: Path, *, offsets_decoder: bool = True) -> str:
    """``kafka-dump-log.sh [--offsets-decoder] --files SEGMENT``'s output."""
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath(), DUMP_LOG]
    if offsets_decoder:
        command.append("--offsets-decoder")
    done = subprocess.run([*command, "--files", str(segment)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kafka-dump-log failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def copy_from_container(container: Any, path: str, target_dir: Path) -> Path:
    """Copy one file out of a running container (Docker's or Podman's archive API) into ``target_dir``."""
    wrapped = container.get_wrapped_container()
    chunks, _ = wrapped.get_archive(path)
    data = io.BytesIO(b"".join(chunks))
    with tarfile.open(fileobj=data) as archive:
        member = archive.getmembers()[0]
        source = archive.extractfile(member)
        if source is None:
            raise RuntimeError(f"{path} is not a file in the container")
        target = target_dir / Path(path).name
        target.write_bytes(source.read())
    return target
