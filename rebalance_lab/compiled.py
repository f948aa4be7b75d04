"""The replay's what-if, partition moves and log parsers compiled to C by mypyc (issue 20), optional and never stale.

The what-if and the assignor ports it runs are pure Python run for every round of every group, the broker-log
and dump-log parsers for every line; mypyc compiles them from their own type annotations to C extensions that do
the same work in a fraction of the CPU. The package never needs them: ``python -m rebalance_lab.compiled build`` (run by
``./dev``'s install) writes them to ``.native/`` beside the package, with a manifest holding the
SHA-256 of every source file they were built from, and :func:`activate` (run when the packages that
hold them import this module, before their first submodule) puts a finder first on ``sys.meta_path``
that loads them instead of the ``.py`` files, only when

* the build exists for this interpreter (its extension suffix),
* every source still has the hash it was built from (an edited module makes the whole build stale:
  the pure Python runs, so an edit is never shadowed by an old binary), and
* ``REBALANCE_LAB_COMPILED`` is not ``0`` (a directory there names another build), and none of the
  modules was already imported as Python (mypyc compiles them as one group whose modules call each
  other natively: all or none).

:func:`status` says which of these held. This module imports nothing of the package: the lowest layer.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from rebalance_lab import native

PACKAGE_DIR = Path(native.PACKAGE_DIR)
#: Where the build goes: beside the package (an editable install's work tree), never inside it.
TARGET = Path(native.TARGET)
MANIFEST = "manifest.json"
ENV = native.ENV

#: The modules compiled: the what-if and the assignor ports it runs, the fold, the model, and the broker-log and
#: dump-log parsers (issue 20; benchmarks/replay_cpu_split.py). ``assignors.errors`` and ``sources.dump_log_values``
#: stay Python: their exceptions subclass RuntimeError / ValueError, which mypyc cannot compile (``assignors.common``
#: is compiled: its AssignorError lives in ``assignors.errors``);
#: ``sources.dump_log_fast`` too (msgspec Structs). Compiled, the model calls its steps natively: the split benchmark
#: then cannot time them apart (it says so; REBALANCE_LAB_COMPILED=0 splits the pure Python).
MODULES = tuple(f"rebalance_lab.clients.assignors.{name}" for name in (
    "abstract_sticky", "common", "cooperative_sticky", "java_hashmap", "partition_movements", "range", "roundrobin",
    "sticky", "sticky_constrained", "sticky_general", "sticky_kernel", "sticky_racks", "sticky_user_data", "types",
)) + tuple(f"rebalance_lab.replay.{name}" for name in (
    "static", "userdata", "whatif", "moves", "episodes", "counts", "model", "summary", "timeline", "membership",
    "generation", "epochs", "member_rows", "sources.broker_log", "sources._broker_builders", "sources._broker_lines",
    "sources._log4j", "sources.dump_log",
))

#: Source trees whose every file is hashed: the compiled modules trust the types of what they import from these.
HASHED = ("clients/assignors", "replay", "protocol")


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules (and their group's shared library) in the build."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        found = self.files.get(fullname)
        if found is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(found))
        return importlib.util.spec_from_file_location(fullname, found, loader=loader)


_state: dict[str, str] = {}


def source_hashes(package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """SHA-256 of every ``.py`` file under :data:`HASHED` and of each C extension's source, by path relative to the
    package."""
    hashes: dict[str, str] = {}
    for tree in HASHED:
        for path in sorted((package_dir / tree).rglob("*.py")):
            hashes[path.relative_to(package_dir).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    for source in native.NATIVE.values():  # built together: an edited C extension rebuilds the lot (--if-stale)
        hashes[source] = hashlib.sha256((package_dir / source).read_bytes()).hexdigest()
    return hashes


def _target() -> Path:
    return Path(native.target_dir())


def _usable(target: Path) -> tuple[str, dict[str, Path]]:
    """(why not, or "compiled"; the files by module name)."""
    if os.environ.get(ENV) == "0":
        return f"disabled ({ENV}=0)", {}
    try:
        manifest = json.loads((target / MANIFEST).read_text())
    except (OSError, ValueError):
        return "absent (python -m rebalance_lab.compiled build)", {}
    if manifest.get("suffix") != native.suffix():
        return "absent for this interpreter", {}
    if manifest.get("sources") != source_hashes():
        return "stale (sources changed since the build): pure Python", {}
    files = {name: target / rel for name, rel in manifest["files"].items()}
    if not all(path.is_file() for path in files.values()):
        return "incomplete build", {}
    if any(name in sys.modules for name in MODULES):
        return "not used (modules already imported as Python)", {}
    return "compiled", files


def activate(target: Path | None = None) -> str:
    """Load the compiled modules from now on when the build is usable; returns :func:`status`. Idempotent."""
    if "status" not in _state:
        target = target or _target()
        why, files = _usable(target)
        _state["status"] = why
        if files:
            sys.meta_path.insert(0, _Finder(files))
    return _state["status"]


def status() -> str:
    """"compiled", or why the Python modules run ("not activated" before the first replay import)."""
    return _state.get("status", "not activated")


def build(target: Path | None = None, jobs: int = 2) -> Path:
    """Compile :data:`MODULES` into ``target`` and write its manifest; returns the manifest's path."""
    import shutil

    target = (target or _target()).resolve()

    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]  # the venv's own (3.11 venvs ship it)

    root = PACKAGE_DIR.parent
    scratch = target / "tmp"
    shutil.rmtree(target, ignore_errors=True)
    hashes = source_hashes()  # before compiling: an edit during the build makes it stale, not wrong
    index = "".join(native.index_line(name, name.replace(".", "/") + native.suffix()) for name in native.NATIVE)
    paths = [name.replace(".", "/") + ".py" for name in MODULES]
    cwd = Path.cwd()
    os.chdir(root)  # mypyc names modules by their path from here
    try:
        from setuptools import Extension

        extensions = mypycify(paths, opt_level="3", target_dir=str(scratch / "c"))
        extensions += [Extension(name, [f"rebalance_lab/{source}"], extra_compile_args=["-O2"])
                       for name, source in native.NATIVE.items()]  # the C extensions (native.py)
        dist = Distribution({"name": "rebalance_lab_compiled", "ext_modules": extensions, "script_name": "build",
                             "script_args": ["build_ext", "--build-lib", str(target), "--build-temp",
                                             str(scratch / "o"), f"--parallel={jobs}"]})
        dist.parse_command_line()
        dist.run_commands()
    finally:
        os.chdir(cwd)
    shutil.rmtree(scratch, ignore_errors=True)
    files = {}
    for path in target.rglob(f"*{native.suffix()}"):
        rel = path.relative_to(target)
        files[".".join((*rel.parts[:-1], rel.name[: -len(native.suffix())]))] = rel.as_posix()
    manifest = target / MANIFEST
    manifest.write_text(json.dumps({"suffix": native.suffix(), "sources": hashes, "files": files}, indent=1))
    (target / native.INDEX).write_text(index)  # fingerprints taken before compiling too
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["build"]:
        if "--if-stale" in args and _usable(_target())[0] == "compiled":
            print(f"compiled modules in {_target()} are up to date")
            return 0
        print(f"compiled into {build().parent}")
        return 0
    if args[:1] == ["status"]:
        print(activate())
        return 0
    print("usage: python -m rebalance_lab.compiled build [--if-stale] | status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
else:
    activate()  # imported by the packages holding the compiled modules, before any of those modules
