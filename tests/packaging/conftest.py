"""One build of the sdist and wheel per test session, shared by the packaging tests."""

from __future__ import annotations

import pytest

from tests.packaging.dists import Dists, build


@pytest.fixture(scope="session")
def built_dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    return build(tmp_path_factory.mktemp("packaging"))
