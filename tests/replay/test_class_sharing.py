"""The local driver's class-data-sharing archive (rebalance_lab.replay.jvm_cds) on a real JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SESSION = """
from pyspark import SparkContext
from rebalance_lab.replay import jvm_cds
from rebalance_lab.replay.spark import build_session, class_archive
archive = class_archive()
archive.parent.mkdir(parents=True)
archive.write_bytes(bytes(65536))
planned = jvm_cds.plan
def plan_strictly(path):
    # -Xshare:on: a JVM that cannot map the archive refuses to start, as a truncated one makes it crash
    found = planned(path)
    return jvm_cds.CdsPlan(found.options + " -Xshare:on", found.archive, found.part)
jvm_cds.plan = plan_strictly
spark = build_session("local[1]")
assert spark.range(3).count() == 3
jvm = SparkContext._gateway.proc.pid
print("cmdline", open(f"/proc/{jvm}/cmdline").read().replace(chr(0), " "))
print("archive left", archive.exists())
spark.stop()
"""


def test_a_damaged_archive_costs_one_jvm_start_not_the_replay(tmp_path: Path) -> None:
    """HotSpot dies of SIGBUS as it maps a truncated archive (seen on OpenJDK 17.0.15; here the archive is zeros and
    -Xshare:on makes the JVM refuse it): the session starts again without it and the archive is deleted, so the
    next run dumps a new one."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "REBALANCE_LAB_SPARK_CDS": "on"}
    done = subprocess.run([sys.executable, "-c", _SESSION], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cmdline = next(line for line in done.stdout.splitlines() if line.startswith("cmdline"))
    assert "-XX:SharedArchiveFile" not in cmdline and "-XX:TieredStopAtLevel=1" in cmdline
    assert "archive left False" in done.stdout
