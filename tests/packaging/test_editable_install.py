"""``pip install -e .`` (what ./dev runs) puts the checkout on sys.path with a plain ``.pth`` line (issue 22).

setuptools' default editable install of a flat layout is an import finder that a ``.pth`` file imports at every
Python start of the venv, with pathlib, urllib.parse, ipaddress and more: about 20 ms of each start (every serve,
every test's subprocess). With ``package-dir`` stated in pyproject.toml it writes a static path instead; edits
to the source still take effect at once, as the path is the checkout itself.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.packaging.dists import REPO_ROOT, tracked_files


def _editable_install(source: Path, target: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--target", str(target), "--editable", str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_editable_install_is_a_path_on_sys_path_without_an_import_finder(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "site"
    for name in tracked_files():
        if name.startswith("rebalance_lab/") or "/" not in name:  # the package and the project's own files
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, source / name)
    _editable_install(source, target)
    (pth,) = target.glob("*.pth")
    assert pth.read_text().split() == [str(source)]  # a path, no ``import`` line for site to run
    assert list(target.glob("*finder*")) == []


def test_a_python_start_in_the_dev_venv_imports_no_editable_finder() -> None:
    # from a folder of no package: what site imports, not the work tree
    done = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    modules = set(done.stdout.split())
    assert not {m for m in modules if "editable" in m}
    assert not modules & {"pathlib", "urllib.parse", "ipaddress", "importlib.util"}

