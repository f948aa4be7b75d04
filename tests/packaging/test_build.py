"""``python -m build`` makes a clean sdist and wheel: SPDX license metadata without setuptools' deprecation
warning, every data file of the package, nothing from tests/, one version, a changelog."""

from __future__ import annotations

import email.parser
import re
import tarfile
import tomllib
import zipfile
from pathlib import PurePosixPath

import rebalance_lab
from tests.packaging.dists import REPO_ROOT, Dists, tracked_files


def _package_data() -> set[str]:
    """Every file under rebalance_lab/ that is not Python source (schemas, config data, pages, ...)."""
    return {name for name in tracked_files() if name.startswith("rebalance_lab/") and not name.endswith(".py")}


def _package_sources() -> set[str]:
    return {name for name in tracked_files() if name.startswith("rebalance_lab/") and name.endswith(".py")}


def _wheel_names(dists: Dists) -> set[str]:
    with zipfile.ZipFile(dists.wheel) as wheel:
        return set(wheel.namelist())


def _sdist_names(dists: Dists) -> set[str]:
    with tarfile.open(dists.sdist) as sdist:
        # drop the leading "rebalance_lab-<version>/" folder
        return {str(PurePosixPath(*PurePosixPath(m.name).parts[1:])) for m in sdist.getmembers() if m.isfile()}


def _metadata(dists: Dists) -> email.message.Message:
    with zipfile.ZipFile(dists.wheel) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(wheel.read(name).decode())


def test_building_prints_no_setuptools_deprecation_warning(built_dists: Dists) -> None:
    warnings = [line for line in built_dists.log.splitlines() if re.search(r"deprecat", line, re.IGNORECASE)]
    assert warnings == []


def test_the_license_is_an_spdx_expression_with_its_file_in_the_wheel(built_dists: Dists) -> None:
    metadata = _metadata(built_dists)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["License"] is None  # the deprecated free-text field is gone
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in _wheel_names(built_dists))


def test_the_wheel_holds_every_module_and_data_file_of_the_package_and_nothing_from_tests(built_dists: Dists) -> None:
    names = _wheel_names(built_dists)
    assert _package_data(), "no package data found: the glob is wrong"
    assert sorted(_package_data() - names) == []
    assert sorted(_package_sources() - names) == []
    assert sorted(n for n in names if not (n.startswith("rebalance_lab/") or ".dist-info/" in n)) == []


def test_the_sdist_holds_the_package_its_data_and_license_and_nothing_from_tests(built_dists: Dists) -> None:
    names = _sdist_names(built_dists)
    assert sorted((_package_data() | _package_sources() | {"LICENSE", "README.md", "pyproject.toml"}) - names) == []
    assert sorted(n for n in names if n.startswith("tests/")) == []


def test_the_version_has_one_source_which_the_metadata_carries(built_dists: Dists) -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert _metadata(built_dists)["Version"] == rebalance_lab.__version__
    assert built_dists.wheel.name.startswith(f"rebalance_lab-{rebalance_lab.__version__}-")


def test_the_changelog_has_an_entry_for_the_current_version() -> None:
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(rebalance_lab.__version__)}\b", changelog, re.MULTILINE)
