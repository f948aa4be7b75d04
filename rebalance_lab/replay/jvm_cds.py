"""A class-data-sharing archive (AppCDS) for the local-mode Spark driver: the JVM's start-up halved.

A ``local[N]`` replay starts a fresh JVM that loads and verifies some thousands of Spark, Hadoop and
Janino classes before its first job; that was most of the session start (18 CPU-s of JVM, 38 s wall on
a loaded two-core machine, for the session and a first ``range(1).count()``). HotSpot (JDK 13+) can
dump the classes a run loaded into a *dynamic archive* at exit (``-XX:ArchiveClassesAtExit``) and map
it at the next start (``-XX:SharedArchiveFile``): 7-8 CPU-s and 11-13 s wall on the same machine.

Dumping has one hazard: a truncated archive makes every later JVM that maps it die of SIGBUS (checked
on OpenJDK 17.0.15, also with ``-XX:+VerifySharedSpaces``). So a JVM dumps into a file of its own
(``<key>.<token>.part``, with the JVM's pid beside it in ``.pid`` once the session is up), and only a
later start renames a part whose JVM has exited to the archive's name; a start that fails with an
archive deletes it (see :func:`rebalance_lab.replay.spark.build_session`). The archive's name carries
what it depends on (JVM, Spark's jars); a JVM whose class path no longer matches ignores it.

``REBALANCE_LAB_SPARK_CDS=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

ENV_SWITCH = "REBALANCE_LAB_SPARK_CDS"
#: The JVM's own CDS messages (a dump warns about every class of a signed jar) stay off the terminal.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


@dataclass(frozen=True)
class CdsPlan:
    """The JVM options of one start, and where its dump (if any) goes."""

    options: str  # to append to spark.driver.extraJavaOptions ("" for none)
    archive: Path | None = None  # the archive mapped
    part: Path | None = None  # the archive this JVM writes at exit


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "on").lower() not in ("off", "0", "false", "no")


def archive_path(directory: Path, depends_on: str) -> Path:
    """The archive's file for what it ``depends_on`` (JVM and jars: a change of either needs a new one)."""
    digest = hashlib.sha1(depends_on.encode()).hexdigest()[:16]
    return directory / f"spark-driver-{digest}.jsa"


def default_directory() -> Path:
    return Path(tempfile.gettempdir()) / f"rebalance-lab-cds-{os.getuid()}"


def plan(archive: Path) -> CdsPlan:
    """Map ``archive`` if it is there (promoting a finished dump first), else dump one at this JVM's exit."""
    promote(archive)
    if archive.exists():
        return CdsPlan(f"{QUIET} -XX:SharedArchiveFile={archive}", archive=archive)
    if _dump_under_way(archive):
        return CdsPlan("")  # another JVM is writing one: no second 150 MB dump
    archive.parent.mkdir(parents=True, exist_ok=True)
    part = archive.with_name(f"{archive.name}.{uuid.uuid4().hex}.part")
    return CdsPlan(f"{QUIET} -XX:ArchiveClassesAtExit={part}", part=part)


def record_writer(part: Path, jvm_pid: int) -> None:
    """Note which JVM writes ``part``: once that process is gone, the dump is complete."""
    part.with_suffix(".pid").write_text(str(jvm_pid))


def promote(archive: Path) -> None:
    """Rename the dump of a JVM that has exited to ``archive``; drop the other finished or orphaned dumps.

    A JVM writes its part only at exit, so a part whose recorded JVM is gone is complete, and a part with no
    recorded JVM (its session never came up) is dropped."""
    for pid_file in sorted(archive.parent.glob(f"{archive.name}.*.pid")):
        pid = _writer(pid_file)
        if pid is not None and _alive(pid):
            continue
        part = pid_file.with_suffix(".part")
        if pid is not None and not archive.exists() and part.exists() and part.stat().st_size > 0:
            os.replace(part, archive)
        with suppress(OSError):
            pid_file.unlink()
    for part in archive.parent.glob(f"{archive.name}.*.part"):
        if not part.with_suffix(".pid").exists():
            with suppress(OSError):
                part.unlink()


def discard(archive: Path) -> None:
    """Remove an archive a JVM could not start with."""
    with suppress(OSError):
        archive.unlink()


def _dump_under_way(archive: Path) -> bool:
    return any(pid is not None and _alive(pid)
               for pid in map(_writer, archive.parent.glob(f"{archive.name}.*.pid")))


def _writer(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
