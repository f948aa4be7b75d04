"""A real browser for tests: Debian's ``chromium``, installed with apt-get when missing (the suite runs as root in CI).

:func:`chromium` answers the browser's path or raises :class:`BrowserUnavailable` saying why; a test that needs
a browser fails on that (it never skips: a missing browser must not pass CI quietly). :func:`dump_dom` loads a
page headless and answers the DOM once the page's scripts have run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

APT_PACKAGES = ("chromium",)
NAMES = ("chromium", "chromium-browser")


class BrowserUnavailable(RuntimeError):
    """No chromium could be found or installed."""


def _which() -> str | None:
    return next((path for name in NAMES if (path := shutil.which(name)) is not None), None)


def _install() -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BrowserUnavailable(f"chromium is missing: run apt-get install -y {' '.join(APT_PACKAGES)}")
    print(f"[browser] installing {' '.join(APT_PACKAGES)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                                              *APT_PACKAGES]):
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise BrowserUnavailable(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
    print(f"[browser] installed in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def chromium() -> str:
    """The chromium executable, installed first when missing."""
    path = _which()
    if path is None:
        _install()
        path = _which()
    if path is None:
        raise BrowserUnavailable("apt-get installed chromium, but no chromium executable is on PATH")
    return path


def dump_dom(url: str, *, budget_ms: int = 5_000, timeout_s: float = 90.0, extra_args: Sequence[str] = ()) -> str:
    """Load ``url`` in headless chromium, let its scripts run for ``budget_ms`` of virtual time, answer the DOM.

    ``extra_args``: more chromium switches, e.g. ``--window-size=1280,1000`` for a page whose layout is measured."""
    with tempfile.TemporaryDirectory(prefix="rbl-chromium-") as profile:
        cmd = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
               *extra_args, "--dump-dom", url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise BrowserUnavailable(f"chromium exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout
