"""The CLI contract (issue 21, item 3): every usage error of ``serve`` exits 2 with one line naming the real
cause: an invalid topic name (Kafka's own reason), a topic without a name, a bad ``--api-versions`` file, a
recording in a missing directory, a control port in use (reported against the control address), brokers'
ports in use (the whole range). Run in this interpreter: ``main`` returns or exits with the process's code."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebalance_lab.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(["serve", "--port", "0", *args])
    except SystemExit as exc:  # argparse's errors exit
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return code, err


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def test_an_invalid_topic_name_exits_2_with_kafkas_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, "--topic", "orders!:3")
    assert code == 2
    assert "Topic name is invalid: 'orders!' contains one or more characters other than ASCII alphanumerics" in err


def test_a_topic_without_a_name_blames_the_name_not_the_partition_count(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, "--topic", ":3")
    assert code == 2
    assert "a topic needs a name before the colon: ':3'" in err and "PARTITIONS > 0" not in err


@pytest.mark.parametrize(("content", "cause"), [
    ('{"JoinGroup": [0, 9]', "cannot read api versions file"),
    ('{"JoinGroupz": [0, 9]}', "unknown api 'JoinGroupz'"),
    ('{"JoinGroup": [0]}', "JoinGroup needs [min, max], got [0]"),
])
def test_a_bad_api_versions_file_exits_2_naming_the_file_and_what_is_wrong(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, cause: str) -> None:
    path = tmp_path / "versions.json"
    path.write_text(content)
    code, err = _run(capsys, "--api-versions", str(path))
    assert code == 2
    assert str(path) in err and cause in err


def test_a_recording_in_a_missing_directory_names_the_recording_not_an_address(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = tmp_path / "missing" / "x.jsonl"
    code, err = _run(capsys, "--record", str(record))
    assert code == 2
    assert f"cannot write the recording {record}: there is no directory {record.parent}" in err
    assert "listen" not in err


def test_a_control_port_in_use_is_reported_against_the_control_address(
        capsys: pytest.CaptureFixture[str], busy_port: int) -> None:
    code, err = _run(capsys, "--control-port", str(busy_port))
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{busy_port} (the control endpoint, --control-port)" in err


def test_brokers_ports_in_use_are_reported_as_the_range_they_need(
        capsys: pytest.CaptureFixture[str], busy_port: int) -> None:
    code, err = _run(capsys, "--port", str(busy_port - 1), "--brokers", "2")
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{busy_port - 1}-{busy_port} (the brokers, --port)" in err


def test_a_data_dir_that_cannot_be_made_names_the_path_not_an_address(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    code, err = _run(capsys, "--data-dir", str(tmp_path / "a-file" / "data"))
    assert code == 2
    assert f"cannot use {tmp_path / 'a-file'}" in err and "listen" not in err
