"""Input with nothing to replay is refused before pyarrow (and with it numpy and pandas) is imported: the refusal
must come within a second (issue 20), and importing Arrow alone took over a second on a loaded machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from rebalance_lab.replay.cli import main
code = main([sys.argv[1], "--out", sys.argv[2]])
print(code, sorted(m for m in ("pyarrow", "numpy", "pandas", "pyspark") if m in sys.modules))
"""


def test_garbage_is_refused_with_exit_2_before_arrow_numpy_or_pandas_load(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_text("garbage\nmore garbage\n")
    done = subprocess.run([sys.executable, "-c", PROBE, str(garbage), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split("\n")[0] == "2 []", done.stdout + done.stderr
    assert "nothing to replay" in done.stderr


def test_every_source_adapter_imports_without_arrow() -> None:
    probe = ("import sys, importlib, pkgutil, rebalance_lab.replay.sources as s\n"
             "for m in pkgutil.iter_modules(s.__path__): importlib.import_module(f'{s.__name__}.{m.name}')\n"
             "print('pyarrow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "False", done.stdout + done.stderr
