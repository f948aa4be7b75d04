"""The executors' Python daemon for the replay: PySpark's own, with the worker's modules imported before it forks.

Spark starts ``python -m <spark.python.daemon.module> pyspark.worker`` once per executor (and Python
environment); the daemon forks a worker process per concurrent task slot, and each worker imports what
its tasks need. PySpark's modules come from ``pyspark.zip`` on the workers' ``PYTHONPATH``, and Python
cannot cache bytecode for a zip, so every worker compiled ``pyspark.worker`` and the Arrow serializers
from source again, and then, on its first task, :func:`importlib.invalidate_caches` made each of the
zip's many package importers re-read the whole archive directory: about 1.5 CPU-s per worker before
its first row. Importing here, once, lets every forked worker inherit the modules, and dropping the
zip's package importers from the cache (a cache: they are rebuilt on demand) leaves one re-read per zip.

The replay's own modules are imported here too, for the same reason, and pandas: pyarrow imports it on a
worker's first ``to_pylist`` (its pandas shim), ~0.5 CPU-s in every worker. :mod:`.spark` names this module in
``spark.python.daemon.module`` of the sessions it launches; anything the daemon cannot import is left to
the worker, as before.

A reused worker runs a full ``gc.collect()`` after every task (``pyspark.daemon.worker``'s loop): a walk over every
object alive in the worker, the modules imported here included, ~0.1-0.2 CPU-s a task, and ~6% of the workers'
samples in a 1e6-event run (py-spy, 80 tasks). The replay's tasks make no reference cycles
(``tests/unit/replay/test_gc_policy.py``) and leave their survivors in the oldest generation
(:mod:`.gcpolicy`), so that walk finds nothing: :func:`young_collection_after_tasks` makes it a young
collection. The automatic collector stays on in the workers, so cycles another task might leave are still
collected, when CPython's own thresholds say so.

Where the same PySpark (and Py4J) is also installed as a package, with its bytecode compiled, the daemon
imports that copy instead of the zip's (:func:`prefer_installed_packages`): compiling ``pyspark.worker``'s
modules from the zip's sources cost the daemon 1.4 CPU-s of every run (1.9 against 0.5 CPU-s measured with
``pip install pyspark``, whose ``SPARK_HOME`` is the package itself and whose zip holds the same release).
"""

from __future__ import annotations

import gc
import importlib
import sys
import zipfile
import zipimport
from importlib.machinery import PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

#: What a replay task's worker imports: PySpark's worker and Arrow serializers, and the replay's task code.
PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyarrow.parquet",
    "pandas",
    "rebalance_lab.replay.tasks",
    "rebalance_lab.replay.sources",
    "rebalance_lab.replay.sources.broker_log",
    "rebalance_lab.replay.sources.client_log",
    "rebalance_lab.replay.sources.console_json",
    "rebalance_lab.replay.sources.dump_log",
    "rebalance_lab.replay.sources.emulator",
    "rebalance_lab.replay.model",
)


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import ``modules``; returns those that could not be (their worker imports them itself, or fails as before)."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def drop_zip_package_importers() -> int:
    """Forget the importers of packages inside zip archives (``.../pyspark.zip/pyspark/sql/``), keeping one per
    archive; returns how many were dropped. ``importlib.invalidate_caches`` re-reads an archive per importer."""
    dropped = 0
    for path, finder in list(sys.path_importer_cache.items()):
        if isinstance(finder, zipimport.zipimporter) and finder.prefix:
            del sys.path_importer_cache[path]
            dropped += 1
    return dropped


def prefer_installed_packages() -> list[str]:
    """Move each zip archive of ``sys.path`` whose top-level package is also installed in a directory, as the very
    same release (its ``version.py`` byte for byte), to the end of ``sys.path``; returns the archives moved.

    Spark puts ``pyspark.zip`` and the Py4J zip first on its workers' ``PYTHONPATH``; Python cannot cache the
    bytecode of modules in a zip, so they are compiled in every daemon. A different or unknown release stays first.
    """
    moved = []
    for entry in [path for path in sys.path if path.endswith(".zip")]:
        package = Path(entry).name.removesuffix(".zip").split("-")[0]  # pyspark.zip, py4j-0.10.9.9-src.zip
        directories = [path for path in sys.path if not path.endswith(".zip")]
        spec = PathFinder.find_spec(package, directories)
        if spec is None or not spec.submodule_search_locations:
            continue
        installed = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        if installed.is_file() and installed.read_bytes() == _archived(entry, f"{package}/version.py"):
            sys.path.remove(entry)
            sys.path.append(entry)
            moved.append(entry)
    return moved


def _archived(archive: str, member: str) -> bytes | None:
    try:
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


class _YoungCollections:
    """The ``gc`` module as :func:`young_collection_after_tasks` shows it to PySpark's daemon: ``collect()``
    collects the youngest generation only; everything else is the module's."""

    @staticmethod
    def collect(generation: int = 0) -> int:
        return gc.collect(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(gc, name)


def young_collection_after_tasks(daemon: ModuleType) -> None:
    """Make the full collection ``daemon`` (``pyspark.daemon``) runs after each task of a reused worker a young one."""
    setattr(daemon, "gc", _YoungCollections())  # noqa: B010  # a module attribute mypy cannot know


def main() -> None:
    prefer_installed_packages()
    preload()
    drop_zip_package_importers()
    import pyspark.daemon

    young_collection_after_tasks(pyspark.daemon)
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
