"""Build rebalance-lab's sdist and wheel as a user's ``python -m build`` does.

The build runs on a copy of the files git tracks or would track (a fresh clone's content plus files not yet
added; no egg-info, caches or anything .gitignore names), in build's isolated environment with the pinned
setuptools of ``pyproject.toml``, so it neither writes into the work tree nor depends on the project's venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path
    log: str  # what the build printed (stdout and stderr)


def tracked_files() -> list[str]:
    """The repository's paths, tracked or not ignored, that exist in the work tree (a deletion is left out)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name and (REPO_ROOT / name).is_file()]


def build(workdir: Path) -> Dists:
    """Copy the tracked files to ``workdir/src`` and build both distributions into ``workdir/dist``."""
    source, out = workdir / "src", workdir / "dist"
    for name in tracked_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"python -m build failed ({done.returncode}):\n{log[-4000:]}")
    (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return Dists(sdist, wheel, log)
