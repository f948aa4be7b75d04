"""Inputs expand in the driver: files, directories, globs; a path naming nothing is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_lab.replay.inputs import InputError, expand_inputs


def test_files_directories_and_globs_expand_sorted_without_duplicates(tmp_path: Path) -> None:
    """Hidden and Spark bookkeeping names are skipped in a directory; a Kafka internal topic's dump (two underscores,
    as Kafka names its partitions' directories) is an input."""
    logs = tmp_path / "logs"
    for directory in ("b", "_temporary/0", "__transaction_state"):
        (logs / directory).mkdir(parents=True)
    for name in ("logs/server.log.2", "logs/server.log.1", "logs/b/client.log", "logs/_SUCCESS", "logs/.hidden",
                 "logs/_temporary/0/part-0", "logs/__consumer_offsets-12.txt", "logs/__transaction_state/x.txt",
                 "dump.txt"):
        (tmp_path / name).write_text("x\n")
    got = expand_inputs([str(logs), str(tmp_path / "logs/server.log.*"), str(tmp_path / "dump.txt")])
    assert [Path(p).relative_to(tmp_path).as_posix() for p in got] == [
        "logs/__consumer_offsets-12.txt", "logs/server.log.1", "logs/server.log.2", "logs/__transaction_state/x.txt",
        "logs/b/client.log", "dump.txt"]
    assert all(Path(p).is_absolute() for p in got)


@pytest.mark.parametrize(("name", "message"), [
    ("missing.log", "no such file or directory"),
    ("nothing-*.log", "no input files there"),
    ("empty", "no input files there"),
])
def test_an_input_that_names_no_file_is_an_error(tmp_path: Path, name: str, message: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=message):
        expand_inputs([str(tmp_path / name)])
