"""The executors' Python daemon for the replay: PySpark's own, with the worker's modules imported before it forks.

Spark starts ``python -m <spark.python.daemon.module> pyspark.worker`` once per executor (and Python
environment); the daemon forks a worker process per concurrent task slot, and each worker imports what
its tasks need. PySpark's modules come from ``pyspark.zip`` on the workers' ``PYTHONPATH``, and Python
cannot cache bytecode for a zip, so every worker compiled ``pyspark.worker`` and the Arrow serializers
from source again, and then, on its first task, :func:`importlib.invalidate_caches` made each of the
zip's many package importers re-read the whole archive directory: about 1.5 CPU-s per worker before
its first row. Importing here, once, lets every forked worker inherit the modules, and dropping the
zip's package importers from the cache (a cache: they are rebuilt on demand) leaves one re-read per zip.

The replay's own modules are imported here too, for the same reason. :mod:`.spark` names this module in
``spark.python.daemon.module`` of the sessions it launches; anything the daemon cannot import is left to
the worker, as before.
"""

from __future__ import annotations

import importlib
import sys
import zipimport

#: What a replay task's worker imports: PySpark's worker and Arrow serializers, and the replay's task code.
PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyarrow.parquet",
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


def main() -> None:
    preload()
    drop_zip_package_importers()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
