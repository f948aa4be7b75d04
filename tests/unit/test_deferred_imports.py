"""serve imports logging without traceback and uuid without platform until they are used (issue 22)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

# run in a fresh interpreter: this one imported logging and uuid long ago
_SCRIPT = """
import sys
from rebalance_lab import deferred_imports
deferred_imports.defer()
import logging, uuid
print("BEFORE", "traceback" in sys.modules, "platform" in sys.modules, "inspect" in sys.modules)
print("LINUX", uuid._LINUX, uuid._AIX)
try:
    raise ValueError("shown with its traceback")
except ValueError:
    logging.getLogger("t").exception("it failed")
import platform
print("SYSTEM", platform.system() == uuid.platform.system())
"""


def _run() -> tuple[list[str], str]:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return out.stdout.splitlines(), out.stderr


def test_logging_and_uuid_are_imported_without_traceback_and_platform() -> None:
    lines, _stderr = _run()
    assert lines[0] == "BEFORE False False False"


def test_logging_formats_an_exceptions_traceback_with_the_module_imported_on_use() -> None:
    _lines, stderr = _run()
    assert "it failed\nTraceback (most recent call last):" in stderr
    assert 'File "<string>", line 9, in <module>' in stderr  # the raise (a -c script shows no source lines)
    assert stderr.rstrip().endswith("ValueError: shown with its traceback")


def test_uuid_knows_the_platform_as_platform_would_tell_it() -> None:
    lines, _stderr = _run()
    import platform

    assert lines[1] == f"LINUX {platform.system() == 'Linux'} {platform.system() == 'AIX'}"
    assert lines[2] == "SYSTEM True"
