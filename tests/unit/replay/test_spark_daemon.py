"""The executors' daemon: what it imports before forking, and the zip importers it forgets (no Spark needed)."""

from __future__ import annotations

import gc
import importlib
import sys
import types
import weakref
import zipfile
from pathlib import Path

import pytest

from rebalance_lab.replay import spark_daemon


def test_preload_imports_what_it_can_and_names_what_it_cannot() -> None:
    missing = spark_daemon.preload(("json", "rebalance_lab.replay.no_such_module"))
    assert missing == ["rebalance_lab.replay.no_such_module"]
    assert "json" in sys.modules


def test_every_preloaded_module_exists() -> None:
    assert spark_daemon.preload() == []


def test_the_importers_of_packages_inside_a_zip_are_dropped_and_the_archives_own_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zpkg/__init__.py", "")
        zf.writestr("zpkg/sub/__init__.py", "VALUE = 7\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))
    for name in ("zpkg", "zpkg.sub"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert importlib.import_module("zpkg.sub").VALUE == 7
    inside = [path for path in sys.path_importer_cache if path.startswith(str(archive) + "/")]
    assert inside  # the package importers of zpkg and zpkg.sub

    assert spark_daemon.drop_zip_package_importers() >= len(inside)
    assert str(archive) in sys.path_importer_cache
    assert not [path for path in sys.path_importer_cache if path.startswith(str(archive) + "/")]
    importlib.invalidate_caches()
    for name in ("zpkg", "zpkg.sub"):
        del sys.modules[name]
    assert importlib.import_module("zpkg.sub").VALUE == 7  # rebuilt on demand


def _archive_and_install(tmp_path: Path, installed_version: str) -> tuple[str, str]:
    archive = tmp_path / "zpkg2.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zpkg2/__init__.py", "WHERE = 'zip'\n")
        zf.writestr("zpkg2/version.py", "__version__ = '1.0'\n")
    site = tmp_path / "site"
    (site / "zpkg2").mkdir(parents=True)
    (site / "zpkg2" / "__init__.py").write_text("WHERE = 'site'\n")
    (site / "zpkg2" / "version.py").write_text(f"__version__ = '{installed_version}'\n")
    return str(archive), str(site)


def test_an_archive_whose_release_is_also_installed_goes_behind_the_installed_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive, site = _archive_and_install(tmp_path, "1.0")
    monkeypatch.setattr(sys, "path", [archive, *sys.path, site])
    monkeypatch.delitem(sys.modules, "zpkg2", raising=False)

    assert spark_daemon.prefer_installed_packages() == [archive]
    assert sys.path[-1] == archive
    assert importlib.import_module("zpkg2").WHERE == "site"


def test_an_archive_of_another_release_than_the_installed_one_stays_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive, site = _archive_and_install(tmp_path, "2.0")
    monkeypatch.setattr(sys, "path", [archive, *sys.path, site])
    monkeypatch.delitem(sys.modules, "zpkg2", raising=False)

    assert spark_daemon.prefer_installed_packages() == []
    assert sys.path[0] == archive
    assert importlib.import_module("zpkg2").WHERE == "zip"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_collection_after_each_task_leaves_the_oldest_generation_alone() -> None:
    daemon = types.ModuleType("fake_daemon")
    daemon.gc = gc  # type: ignore[attr-defined]
    spark_daemon.young_collection_after_tasks(daemon)
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    gc.freeze()
    gc.unfreeze()  # the cycle is in the oldest generation, where the replay's tasks leave their survivors
    del cycle

    daemon.gc.collect()  # what pyspark.daemon runs after a task
    assert gone() is not None  # a full collection would have walked the oldest generation and freed it
    assert daemon.gc.isenabled is gc.isenabled
    gc.collect()
    assert gone() is None


def test_pysparks_daemon_is_given_young_collections() -> None:
    import pyspark.daemon

    original = pyspark.daemon.__dict__["gc"]
    try:
        spark_daemon.young_collection_after_tasks(pyspark.daemon)
        assert pyspark.daemon.__dict__["gc"].collect is not gc.collect
    finally:
        pyspark.daemon.__dict__["gc"] = original
