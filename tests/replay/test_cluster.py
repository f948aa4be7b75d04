"""The same replay on a Spark standalone cluster (a master and a worker on loopback) as in local mode.

The cluster run is ``python -m rebalance_lab.replay --master spark://...`` in its own process
(one JVM hosts one SparkContext, and this session's local one belongs to the other tests);
its tables must equal the local run's, and its parse report, which travels from the
executors to the driver in an accumulator, must count the same lines.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from rebalance_lab.replay import tables
from rebalance_lab.replay.spark import run_spark
from tests.replay.standalone import StandaloneCluster
from tests.replay.test_pipeline import canonical, read_table

REPO = Path(__file__).resolve().parents[2]
WHATIF = ("range", "cooperative-sticky")


def test_a_standalone_cluster_gives_the_same_result_as_local_mode(spark: Any, recording: Path,
                                                                  tmp_path: Path) -> None:
    local = run_spark(spark, [str(recording)], whatif=WHATIF, out_dir=tmp_path / "local", report=False)
    out = tmp_path / "cluster"
    with StandaloneCluster(tmp_path / "spark") as cluster:
        command = [sys.executable, "-m", "rebalance_lab.replay", str(recording), "--master", cluster.master_url,
                   "--out", str(out), "--quiet", *(arg for name in WHATIF for arg in ("--what-if", name))]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:] + cluster.logs()
        apps = (cluster.status() or {}).get("completedapps", [])
    assert [app["name"] for app in apps] == ["rebalance-lab replay"]  # the master ran it ...
    assert list(cluster.work_dir.glob("app-*/*/stderr"))  # ... on the worker's executor
    assert f"master {cluster.master_url}" in done.stdout
    assert "parse: " + local.parse_report.summary() in done.stdout
    for name in tables.TABLES:
        assert canonical(read_table(out / name)) == canonical(read_table(local.out_dir / name)), name
