"""A demo-sized replay in the single process loads no pyarrow, pandas, numpy or pyspark (issue 20 item 3):
importing them costs 0.8-2.5 s, more than the replay itself. Checked in a fresh interpreter, through the
demo's own replay call and through ``rebalance-lab replay --engine auto``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from rebalance_lab.replay import tables

DEMO = Path(__file__).parent / "samples" / "demo-recording.jsonl"
HEAVY = ("pyarrow", "pandas", "numpy", "pyspark", "py4j")

PROBE = """
import json, sys
{call}
print(json.dumps({{"status": status, "heavy": sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})}}))
"""


def run_probe(call: str, cwd: Path) -> dict[str, object]:
    code = PROBE.format(call=call, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_demos_replay_loads_no_arrow_pandas_or_spark_and_writes_every_table(tmp_path: Path) -> None:
    call = ("from rebalance_lab.demo import replay\n"
            f"status = replay({str(DEMO)!r}, 'out', open_report=False)")
    assert run_probe(call, tmp_path) == {"status": 0, "heavy": []}
    assert (tmp_path / "out" / "report.html").exists()
    for name, schema in tables.TABLES.items():
        assert pq.read_table(tmp_path / "out" / name / "part-0.parquet").schema.equals(schema), name


def test_replay_engine_auto_from_the_command_line_loads_none_of_them(tmp_path: Path) -> None:
    call = ("from rebalance_lab.cli import main\n"
            f"status = main(['replay', {str(DEMO)!r}, '--out', 'out', '--quiet', '--what-if', 'sticky'])")
    assert run_probe(call, tmp_path) == {"status": 0, "heavy": []}
