"""Where the compiled build lives, and the C extensions of our own in it (the lowest layer: imports nothing of ours).

``python -m rebalance_lab.compiled build`` (rebalance_lab/compiled.py) writes the build to ``.native/`` beside the
package. Besides the mypyc-compiled Python modules it builds :data:`NATIVE`: small C extensions, each used by code that
runs its own Python path without it (the classic JoinGroup/SyncGroup codec's C twin also hands that path anything
unusual). :func:`native` loads one when its index line says it was
built from the source now here, on the shell's path: so it reads no JSON, hashes no tree and imports neither pathlib
nor hashlib (tests/unit/test_serve_imports.py; issue 22's start-up).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from types import ModuleType

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: Where the build goes: beside the package (an editable install's work tree), never inside it.
TARGET = os.path.join(os.path.dirname(PACKAGE_DIR), ".native")
ENV = "REBALANCE_LAB_COMPILED"
#: The C extensions' index in the build: one line each, "module file fingerprint" (:func:`index_line`).
INDEX = "native.txt"

#: C extensions: module name -> its source, relative to the package.
NATIVE = {"rebalance_lab.coordinator._send_many": "coordinator/_send_many.c",
          "rebalance_lab.coordinator._receive_many": "coordinator/_receive_many.c",
          "rebalance_lab.protocol._classic_group": "protocol/_classic_group.c"}


def suffix() -> str:
    """The file name ending of this interpreter's extension modules."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def target_dir() -> str:
    """The build's directory: ``.native/``, or the one ``REBALANCE_LAB_COMPILED`` names."""
    chosen = os.environ.get(ENV, "")
    return chosen if chosen not in ("", "0", "1") else TARGET


def fingerprint(name: str) -> str:
    """The source of the C extension ``name`` as it is now: its size and CRC-32 (a staleness check, not a seal)."""
    import zlib  # here: serve's import thread and its early shell's handlers import no module in common

    with open(os.path.join(PACKAGE_DIR, NATIVE[name]), "rb") as source:
        data = source.read()
    return f"{len(data)}-{zlib.crc32(data):08x}"


def index_line(name: str, file: str) -> str:
    """The build's index line of ``name``, built into ``file`` (relative to the build's directory)."""
    return f"{name} {file} {fingerprint(name)}\n"


def native(name: str) -> ModuleType | None:
    """The C extension ``name`` (one of :data:`NATIVE`) from the build, or None: switched off
    (``REBALANCE_LAB_COMPILED=0``), not built, built for another interpreter, or built from another source."""
    if os.environ.get(ENV) == "0":
        return None
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    target = target_dir()
    try:
        with open(os.path.join(target, INDEX), encoding="utf-8") as index:
            lines = [line.split() for line in index]
        built = next((fields for fields in lines if len(fields) == 3 and fields[0] == name), None)
        if built is None or built[2] != fingerprint(name):
            return None
    except (OSError, KeyError):
        return None
    path = os.path.join(target, built[1])
    if not path.endswith(suffix()) or not os.path.isfile(path):
        return None  # built for another interpreter, or removed
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.machinery.ModuleSpec(name, loader, origin=path)
    module = loader.create_module(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module
