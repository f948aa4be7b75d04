"""The layers read top-down (STYLE.md): cli -> api -> control/faults/observe/scenarios -> coordinator/replay
-> clients -> protocol -> native. ``protocol/`` imports nothing of ours from any layer above it; below it is only
``native.py``, the loader of the build's C extensions, which imports nothing of ours (the classic JoinGroup/SyncGroup
fast path has a C twin there)."""

from __future__ import annotations

import ast
from pathlib import Path

import rebalance_lab

PACKAGE = Path(rebalance_lab.__file__).parent


def _our_imports(source: str, package: str) -> set[str]:
    """Every ``rebalance_lab.*`` module a module of ``package`` imports (absolute or relative, at any depth)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.update(f"{base}.{alias.name}" if base == "rebalance_lab" else base for alias in node.names)
    return {name for name in found if name == "rebalance_lab" or name.startswith("rebalance_lab.")}


def _imports_of_layer(layer: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        name = path.relative_to(PACKAGE.parent)
        found[str(name)] = _our_imports(path.read_text(), ".".join(name.parts[:-1]))
    return found


def test_protocol_imports_nothing_of_ours_outside_protocol() -> None:
    outside = {
        module: sorted(name for name in names
                       if not name.startswith("rebalance_lab.protocol") and name != "rebalance_lab.native")
        for module, names in _imports_of_layer("protocol").items()
    }
    assert {module: names for module, names in outside.items() if names} == {}


def test_the_import_finder_sees_absolute_relative_and_package_imports() -> None:
    source = ("from rebalance_lab.clients import x\nfrom ..api import Emulator\nfrom . import codec\n"
              "import rebalance_lab.coordinator.server\nfrom rebalance_lab import cli\nimport json\n"
              "def late():\n    from rebalance_lab.observe import narrator\n")
    assert _our_imports(source, "rebalance_lab.protocol") == {
        "rebalance_lab.clients", "rebalance_lab.api", "rebalance_lab.protocol",
        "rebalance_lab.coordinator.server", "rebalance_lab.cli", "rebalance_lab.observe",
    }


def test_native_imports_nothing_of_ours() -> None:
    assert _our_imports((PACKAGE / "native.py").read_text(), "rebalance_lab") == set()
