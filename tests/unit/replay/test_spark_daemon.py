"""The executors' daemon: what it imports before forking, and the zip importers it forgets (no Spark needed)."""

from __future__ import annotations

import importlib
import sys
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
