"""No module of the replay imports itself back through others (issue 20 item 7: epochs.py <-> timeline.py was one).

Module-level imports count, including those under ``if TYPE_CHECKING:`` (a type-only circle still
means two modules that cannot be read apart); imports inside functions do not (the source registry
loads its adapters on first use by design). Every module is also imported, so a circle that Python
would trip over shows as an ImportError here.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import rebalance_lab

PACKAGE = Path(rebalance_lab.__file__).parent
SCOPE = "rebalance_lab.replay"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module, module: str, is_package: bool) -> set[str | tuple[str, str]]:
    """Imported module names, and (``pkg.name``, ``pkg``) for a from-import resolved later (:func:`_resolve`)."""
    found: set[str | tuple[str, str]] = set()
    nodes: list[ast.stmt] = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If | ast.Try):  # TYPE_CHECKING blocks and import fallbacks
            nodes.extend(node.body + node.orelse + getattr(node, "handlers", []) + getattr(node, "finalbody", []))
        elif isinstance(node, ast.ExceptHandler):
            nodes.extend(node.body)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rsplit(".", 1)[0]
                package = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{package}.{base}" if base else package
            # "from pkg import sub" depends on pkg.sub (a module), "from pkg import name" on pkg itself
            found.update((f"{base}.{alias.name}", base) for alias in node.names)
    return found


def _resolve(pairs: set[str | tuple[str, str]], modules: set[str]) -> set[str]:
    resolved = set()
    for item in pairs:
        if isinstance(item, tuple):
            item = item[0] if item[0] in modules else item[1]
        resolved.add(item)
    return resolved


def import_graph(scope: str = SCOPE) -> dict[str, set[str]]:
    """Module -> the modules of ``scope`` it imports at module level."""
    paths = sorted((PACKAGE.parent / scope.replace(".", "/")).rglob("*.py"))
    modules = {_module_name(path): path for path in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _resolve(_top_level_imports(ast.parse(path.read_text()), name, path.name == "__init__.py"),
                            set(modules))
        graph[name] = {other for other in imported if other in modules and other != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle found by a depth-first walk (each reported once, from its smallest module)."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                circle = path[path.index(nxt):]
                start = circle.index(min(circle))
                found.add(tuple(circle[start:] + circle[:start]))
            elif nxt > path[0]:  # only walk circles through larger names from each start: each found once
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return [list(circle) for circle in sorted(found)]


def test_the_replay_modules_import_each_other_without_a_circle() -> None:
    assert cycles(import_graph()) == []


def test_every_replay_module_imports() -> None:
    for name in sorted(import_graph()):
        importlib.import_module(name)


def test_the_circle_finder_finds_a_type_only_circle() -> None:
    a = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.b import X\n")
    b = ast.parse("from p.a import Y\ndef late():\n    from p.c import Z\n")
    modules = {"p.a", "p.b", "p.c"}
    graph = {"p.a": _resolve(_top_level_imports(a, "p.a", False), modules) & modules,
             "p.b": _resolve(_top_level_imports(b, "p.b", False), modules) & modules}
    assert graph == {"p.a": {"p.b"}, "p.b": {"p.a"}}
    assert cycles(graph) == [["p.a", "p.b"]]
