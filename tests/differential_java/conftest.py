"""One Java oracle process for the whole session (tests/java_oracle.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.java_oracle import JavaOracle, OracleUnavailable


@pytest.fixture(scope="session")
def java_oracle() -> Iterator[JavaOracle]:
    try:
        oracle = JavaOracle.start()
    except OracleUnavailable as exc:
        pytest.skip(f"Java oracle unavailable: {exc}")
    try:
        yield oracle
    finally:
        oracle.close()
