"""Two standard modules a ``serve`` process imports without what they import for rare uses (start-up, issue 22).

``logging`` imports ``traceback`` (with ``linecache``, ``tokenize``, ``textwrap``: ~5 ms of a start) to format an
exception or a stack, which a serve start does not do; ``uuid`` imports ``platform`` (~3 ms, a dozen regular
expressions compiled) to call ``platform.system()`` once. :func:`defer` imports both with a stand-in for the
module in ``sys.modules`` meanwhile, removes it at once, and leaves each module an :class:`ImportedOnUse` that
imports the real one on its first attribute read. The asyncio shell's import thread imports ``traceback``
beside the early shell anyway (asyncio needs it). Only ``serve``'s own process calls it (cli.main), before
either module is imported; if one already is, nothing changes.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any


class ImportedOnUse:
    """Stands for the top-level module ``name``: imported (once, by the import system, under its module lock)
    when an attribute is first read, which is then read from it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(__import__(self._name), attribute)


def import_without(name: str, stand_ins: dict[str, ModuleType]) -> ModuleType | None:
    """Import the top-level module ``name`` while ``stand_ins`` (module name -> stand-in) are in ``sys.modules``;
    None (and nothing imported) if any of them is imported already."""
    if name in sys.modules or any(other in sys.modules for other in stand_ins):
        return None
    sys.modules.update(stand_ins)
    try:
        return __import__(name)
    finally:
        for other, stand_in in stand_ins.items():
            if sys.modules.get(other) is stand_in:
                del sys.modules[other]


def _platform_for_uuid() -> ModuleType:
    # uuid reads platform.system() once at import (3.11: to know AIX and Linux); on a POSIX system that is
    # os.uname()'s sysname, as platform.uname() gives it (its corrections are for Windows and Java only)
    stand_in = ModuleType("platform")
    stand_in.system = lambda: os.uname().sysname  # type: ignore[attr-defined]
    return stand_in


def defer() -> None:
    """Import ``logging`` and ``uuid`` without ``traceback`` and ``platform`` (see the module's docstring)."""
    logging = import_without("logging", {"traceback": ModuleType("traceback")})
    if logging is not None:
        logging.traceback = ImportedOnUse("traceback")  # type: ignore[attr-defined]
    if sys.platform not in ("win32", "darwin") and hasattr(os, "uname"):  # where uuid imports platform
        uuid = import_without("uuid", {"platform": _platform_for_uuid()})
        if uuid is not None:
            uuid.platform = ImportedOnUse("platform")  # type: ignore[attr-defined]
