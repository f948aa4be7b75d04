"""One SparkSession for every replay test (spec §6.2): local[2], two shuffle partitions, UI off, loopback.

A test that needs Spark fails, never skips, when Java or pyspark is missing: the replay's
Spark path is part of the product. The recording of :mod:`tests.replay.scenario` is made
once per session too (it plays real group members against the emulator for a few seconds).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.replay.scenario import record

# A test run launches one driver JVM (the session below) and a few in subprocesses: the class-data-sharing archive
# a first JVM dumps at exit (150 MB, tens of seconds) would cost more than it saves. test_class_sharing turns it on.
os.environ.setdefault("REBALANCE_LAB_SPARK_CDS", "off")


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fails the test if the CLI tries to build a Spark session (input refused before Spark, the local engine)."""
    started: list[str] = []

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        started.append("build_session")
        raise AssertionError("Spark was started")

    monkeypatch.setattr("rebalance_lab.replay.spark.build_session", refuse)
    yield started


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from rebalance_lab.replay.spark import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="rebalance-lab replay tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario's recording (JSON Lines, rbl-event/1)."""
    return record(tmp_path_factory.mktemp("recording") / "scenario.jsonl")
