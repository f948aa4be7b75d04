"""``rebalance-lab export``: a real group's recording written in every format, and the command's errors."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab import cli
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.emulator import start_emulator
from rebalance_lab.observe.export import export_file, read_events
from rebalance_lab.observe.formats import FORMATS, render
from rebalance_lab.protocol.consumer_protocol import decode_assignment
from tests.unit.observe.spec_regexes import ENVELOPE, MESSAGE, PREFIX

EXE = str(Path(sys.executable).with_name("rebalance-lab"))
SETTINGS: dict[str, Any] = {"session_timeout_ms": 6_000, "rebalance_timeout_ms": 5_000, "heartbeat_interval_ms": 50}
NO_SPEC_REGEX = re.compile(r"^Pending dynamic member with id \S+ joins group g in \w+ state\. "
                           r"Adding to the group now\.$")


async def play(path: Path, flavor: Flavor) -> None:
    """Two dynamic members and a static one join, one leaves, then everyone closes."""
    config = EmulatorConfig(port=0, topics=(("t", 6),), record_path=str(path), flavor=flavor,
                            group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100))
    server = await start_emulator(config)
    try:
        bootstrap = server.bootstrap_servers
        a = GroupMember(bootstrap, "g", ["t"], ["range"], client_id="a", **SETTINGS)
        await a.join()
        a.start_heartbeats()
        c = GroupMember(bootstrap, "g", ["t"], ["range"], client_id="c", group_instance_id="inst-c", **SETTINGS)
        d = GroupMember(bootstrap, "g", ["t"], ["range"], client_id="d", **SETTINGS)
        await asyncio.gather(c.join(), d.join(), a.wait_for_generation(2))
        for member in (c, d):
            member.start_heartbeats()
        await d.close(leave=True)
        await asyncio.gather(a.wait_for_generation(3), c.wait_for_generation(3))
        await a.close(leave=True)
        await c.close(leave=True)
    finally:
        await server.stop()


@pytest.fixture(scope="module", params=[Flavor.KAFKA_4, Flavor.KAFKA_3], ids=["kafka-4", "kafka-3"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "rec.jsonl"
    asyncio.run(play(path, request.param))
    return path


def test_a_real_groups_recording_exports_in_every_format(recording: Path, tmp_path: Path) -> None:
    for name in FORMATS:
        out = tmp_path / f"{name}.txt"
        assert export_file(recording, name, str(out)) > 0
        assert out.read_text().endswith("\n")


@pytest.mark.parametrize("fmt", ["broker-log-scala", "broker-log-java"])
def test_every_exported_broker_line_matches_the_spec_regexes(recording: Path, fmt: str) -> None:
    events = read_events(recording)
    kinds: list[str] = []
    olds: list[int] = []
    for line in render(events, fmt, tz="Asia/Kolkata"):
        envelope = ENVELOPE.match(line)
        assert envelope and envelope.group(2) == "INFO", line
        prefix = PREFIX.match(envelope.group(3))
        assert prefix, line
        body = envelope.group(3)[prefix.end():]
        names = [name for name, rx in MESSAGE.items() if rx.match(body)]
        assert len(names) == 1 or (not names and NO_SPEC_REGEX.match(body)), body
        kinds.extend(names)
        if (prepare := MESSAGE["prepare"].match(body)) is not None:
            olds.append(int(prepare.group(3)))
    count = {t: sum(1 for e in events if e["event_type"] == t) for t in ("REBALANCE_PREPARE", "JOIN_COMPLETE")}
    assert kinds.count("prepare") == count["REBALANCE_PREPARE"] and kinds.count("stabilized") == count["JOIN_COMPLETE"]
    assert kinds.count("empty") == 1 and kinds.count("leave_scala" if "scala" in fmt else "leave_java") == 3
    assert olds == [e["prev_generation"] for e in events if e["event_type"] == "REBALANCE_PREPARE"]


def _assignments(events: list[dict[str, Any]]) -> list[dict[str, list[tuple[str, int]]]]:
    return [{m["member_id"]: [(tp["topic"], tp["partition"]) for tp in m["assignment"]] for m in e["members"]}
            for e in events if e["event_type"] == "GENERATION_SNAPSHOT"]


def _decoded(assignment: str) -> list[Any]:
    return list(decode_assignment(base64.b64decode(assignment)).partitions)


def test_the_offsets_dumps_hold_what_the_members_were_assigned(recording: Path) -> None:
    events = read_events(recording)
    expected = _assignments(events)
    dumped = [json.loads(line.split(" payload: ", 1)[1])["data"] for line in render(events, "dump-log")
              if line.startswith("| ")]
    from_dump = [{m["memberId"]: [(p["topic"], n) for p in m["assignment"]["assignedPartitions"]
                                  for n in p["partitions"]] for m in d["members"]} for d in dumped if d["members"]]
    assert from_dump == expected
    consoled = [json.loads(line)["value"]["data"] for line in render(events, "console-json")]
    from_console = [{m["memberId"]: [tuple(tp) for tp in _decoded(m["assignment"])] for m in d["members"]}
                    for d in consoled if d["members"]]
    assert from_console == expected
    join_ms = [e["ts"] for e in events if e["event_type"] == "JOIN_COMPLETE"]
    assert len({d["currentStateTimestamp"] for d in dumped if d["members"]}) == len(join_ms)


def test_each_clients_log_ends_with_the_partitions_it_was_last_given(recording: Path) -> None:
    events = read_events(recording)
    last = _assignments(events)[-1]
    lines = list(render(events, "client-log"))
    for member_id, partitions in last.items():
        client = next(m["client_id"] for e in events if e["event_type"] == "GENERATION_SNAPSHOT"
                      for m in e["members"] if m["member_id"] == member_id)
        added = [line for line in lines if f"clientId={client}, groupId=g] Adding newly assigned" in line]
        given = ", ".join(f"{t}-{p}" for t, p in partitions)
        assert added[-1].split("partitions: ", 1)[1].rsplit(" (", 1)[0] == f"[{given}]"
    assert sum("sending LeaveGroup request" in line for line in lines) == 2  # a and d; the static c never sends one


def test_the_command_writes_to_standard_output(recording: Path) -> None:
    result = subprocess.run([EXE, "export", str(recording), "--as", "broker-log-java", "--tz", "Europe/Berlin",
                             "--broker-id", "3", "--out", "-"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    expected = list(render(read_events(recording), "broker-log-java", tz="Europe/Berlin", broker_id=3))
    assert result.stdout.splitlines() == expected and "[GroupCoordinator id=3 " in result.stdout


def test_the_command_writes_a_file_with_noise(recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "server.log"
    assert cli.main(["export", str(recording), "--as", "broker-log-scala", "--noise", "--out", str(out)]) == 0
    text = out.read_text().splitlines()
    assert len(text) > len(list(render(read_events(recording), "broker-log-scala")))
    assert any(line.startswith("\tat ") for line in text)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["export", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("lines", "message"), [
    (['{"schema_version":"rbl-event/1","event_type":"GROUP_EMPTY"}', "{oops"], "bad.jsonl:2: not valid JSON"),
    (['{"schema_version":"rbl-event/2"}'], "bad.jsonl:1: schema_version 'rbl-event/2' is not rbl-event/1"),
    (["", "[1, 2]"], "bad.jsonl:2: expected a JSON object, got list"),
    (['{"schema_version":"rbl-event/1","group_id":"g","event_type":"GROUP_DEAD","ts":"yesterday"}'],
     "has a ts that is not ISO-8601: 'yesterday'"),
])
def test_bad_recordings_are_one_line_errors_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], message: str,
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.log"
    code, err = _run(capsys, str(bad), "--as", "broker-log-scala", "--out", str(out))
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing half-written


def test_usage_errors_exit_with_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "rec.jsonl"
    rec.write_text('{"schema_version":"rbl-event/1","group_id":null,"event_type":"TOPIC_METADATA","ts":0}\n')
    cases = [
        ((str(tmp_path / "missing.jsonl"), "--as", "dump-log", "--out", "-"), "no such recording"),
        ((str(tmp_path), "--as", "dump-log", "--out", "-"), "is a directory"),
        ((str(rec), "--as", "broker-log-java", "--tz", "Mars/Olympus", "--out", "-"), "unknown time zone"),
        ((str(rec), "--as", "dump-log", "--tz", "UTC", "--out", "-"), "--tz does not apply to dump-log"),
        ((str(rec), "--as", "console-json", "--noise", "--out", "-"), "--noise does not apply to console-json"),
        ((str(rec), "--as", "dump-log", "--out", str(tmp_path / "no" / "dir" / "x")), "cannot write"),
    ]
    for args, message in cases:
        code, err = _run(capsys, *args)
        assert code == 2 and message in err, (args, err)
    for args in [(str(rec), "--as", "syslog", "--out", "-"), (str(rec), "--out", "-"),
                 (str(rec), "--as", "dump-log", "--broker-id", "-1", "--out", "-")]:
        with pytest.raises(SystemExit) as exited:
            cli.main(["export", *args])
        assert exited.value.code == 2
        assert "error:" in capsys.readouterr().err
