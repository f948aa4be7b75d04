"""The local Spark driver's class-data-sharing archive: which JVM dumps, which maps, and when a dump is taken."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_lab.replay import jvm_cds


@pytest.fixture()
def archive(tmp_path: Path) -> Path:
    return jvm_cds.archive_path(tmp_path / "cds", "java 17|pyspark 4")


def _exited_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_without_an_archive_the_jvm_dumps_one_into_a_part_of_its_own(archive: Path) -> None:
    plan = jvm_cds.plan(archive)
    assert plan.archive is None and plan.part is not None
    assert plan.part.parent == archive.parent and plan.part.name.startswith(archive.name)
    assert f"-XX:ArchiveClassesAtExit={plan.part}" in plan.options
    assert jvm_cds.QUIET in plan.options  # a dump warns about every class of a signed jar otherwise


def test_a_part_whose_jvm_has_exited_becomes_the_archive_and_is_mapped(archive: Path) -> None:
    part = jvm_cds.plan(archive).part
    assert part is not None
    part.write_bytes(b"dumped")
    jvm_cds.record_writer(part, _exited_pid())
    plan = jvm_cds.plan(archive)
    assert archive.read_bytes() == b"dumped" and not part.exists()
    assert plan.archive == archive and plan.part is None
    assert plan.options.endswith(f"-XX:SharedArchiveFile={archive}")
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]


def test_a_part_still_being_written_is_neither_mapped_nor_written_again(archive: Path) -> None:
    """A truncated archive kills every JVM that maps it (SIGBUS): only an exited JVM's dump is complete."""
    part = jvm_cds.plan(archive).part
    assert part is not None
    part.write_bytes(b"half")
    jvm_cds.record_writer(part, os.getpid())  # alive
    plan = jvm_cds.plan(archive)
    assert plan.options == "" and not archive.exists() and part.exists()


def test_a_session_that_is_up_but_not_yet_dumping_keeps_others_from_dumping_too(archive: Path) -> None:
    part = jvm_cds.plan(archive).part
    assert part is not None
    jvm_cds.record_writer(part, os.getpid())  # the JVM writes its part only at exit
    assert jvm_cds.plan(archive).options == ""


def test_a_part_no_jvm_was_recorded_for_is_dropped(archive: Path) -> None:
    archive.parent.mkdir(parents=True)
    orphan = archive.with_name(f"{archive.name}.0123.part")
    orphan.write_bytes(b"from a session that never came up")
    plan = jvm_cds.plan(archive)
    assert not orphan.exists() and not archive.exists() and plan.part is not None


def test_a_finished_dump_beside_an_archive_is_dropped_not_swapped_in(archive: Path) -> None:
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"first")
    part = archive.with_name(f"{archive.name}.0456.part")
    part.write_bytes(b"second")
    jvm_cds.record_writer(part, _exited_pid())
    assert jvm_cds.plan(archive).archive == archive
    assert archive.read_bytes() == b"first" and sorted(p.name for p in archive.parent.iterdir()) == [archive.name]


def test_the_archive_name_changes_with_what_it_depends_on(tmp_path: Path) -> None:
    java17, java21 = (jvm_cds.archive_path(tmp_path, f"java {v}|pyspark 4.0") for v in (17, 21))
    assert java17 != java21 and java17.parent == java21.parent == tmp_path


@pytest.mark.parametrize("value", ["off", "0", "false", "NO"])
def test_the_environment_can_turn_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(jvm_cds.ENV_SWITCH, value)
    assert not jvm_cds.enabled()
    monkeypatch.setenv(jvm_cds.ENV_SWITCH, "on")
    assert jvm_cds.enabled()
