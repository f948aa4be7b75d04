"""``rebalance-lab diagram``: sequence diagrams of a recording's rebalances (issue 19 item 4)."""

from __future__ import annotations

import asyncio
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rebalance_lab.cli import main
from rebalance_lab.scenarios import library, load_scenario
from rebalance_lab.scenarios.play import PlayOptions, play_async

_PARTICIPANT = re.compile(r"^    participant (\w+) as (.+)$")
_ARROW = re.compile(r"^    (\w+)(->>|-->>|-\)|--\))(\w+): (.*)$")


def _record(name: str, path: Path) -> Path:
    transcript = asyncio.run(play_async(load_scenario(library.path_of(name)), io.StringIO(),
                                        PlayOptions(record_path=str(path))))
    assert transcript.ok
    return path


@pytest.fixture(scope="module")
def leave_and_rejoin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record("leave_and_rejoin", tmp_path_factory.mktemp("rec") / "leave_and_rejoin.jsonl")


@pytest.fixture(scope="module")
def reconciles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record("kip848_second_member_reconciles", tmp_path_factory.mktemp("rec") / "kip848.jsonl")


def _diagram(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["diagram", *args])
    out, err = capsys.readouterr()
    return status, out, err


def _mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str, str]]]:
    """Participants (id -> label) and arrows (from label, arrow, to label, text) in order."""
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    participants = dict(m.groups() for m in map(_PARTICIPANT.match, lines) if m)
    arrows = [(participants[m[1]], m[2], participants[m[3]], m[4]) for m in map(_ARROW.match, lines) if m]
    assert lines.count("    rect rgba(128, 128, 128, 0.08)") == lines.count("    end")
    return participants, arrows


def test_mermaid_draws_each_generation_with_the_coordinator_and_the_members(
        leave_and_rejoin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _diagram(capsys, str(leave_and_rejoin), "--generation", "2")
    assert status == 0
    participants, arrows = _mermaid(out)
    labels = list(participants.values())
    assert labels[0] == "coordinator" and [label.split("-")[0] for label in labels[1:]] == ["b", "a"]
    a = next(label for label in labels if label.startswith("a-"))
    b = next(label for label in labels if label.startswith("b-"))
    assert arrows[:10] == [
        (b, "->>", "coordinator", "JoinGroup member_id='' [range]"),
        ("coordinator", "-->>", b, "MEMBER_ID_REQUIRED (KIP-394)"),
        (b, "->>", "coordinator", "JoinGroup [range]"),
        (a, "->>", "coordinator", "Heartbeat"),  # recorded: a learns of the rebalance from its heartbeat
        ("coordinator", "-->>", a, "REBALANCE_IN_PROGRESS"),
        (a, "->>", "coordinator", "JoinGroup [range]"),
        ("coordinator", "-->>", a, "generation 2 range (leader, gets the members)"),
        ("coordinator", "-->>", b, "generation 2 range (follower)"),
        (b, "-)", "coordinator", "SyncGroup (no assignments)"),  # inferred: only the leader's is recorded
        (a, "->>", "coordinator", "SyncGroup with 2 assignment(s)"),
    ]
    # the SyncGroup answers come in the coordinator's member order (Java HashMap order on kafka-4)
    assert sorted(arrows[10:12]) == [("coordinator", "-->>", a, "assigned t[0]"),
                                     ("coordinator", "-->>", b, "assigned t[1]")]
    assert arrows[12:] == []  # b's LeaveGroup caused generation 3: it opens that one's diagram


def test_a_generation_opens_with_what_caused_it(leave_and_rejoin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _diagram(capsys, str(leave_and_rejoin), "--generation", "3")
    assert status == 0
    _, arrows = _mermaid(out)
    assert arrows[0][0].startswith("b-") and arrows[0][1:] == ("->>", "coordinator", "LeaveGroup")


def test_mermaid_of_all_generations_has_one_band_each(leave_and_rejoin: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _diagram(capsys, str(leave_and_rejoin))
    assert status == 0
    lines = out.splitlines()
    titles = [lines[i + 1] for i, line in enumerate(lines) if line.startswith("    rect ")]
    assert titles == [f"    Note over coordinator: generation {n} (range)" for n in (1, 2, 3)] + [
        "    Note over coordinator: generation 4"]  # the last leave empties the group: no protocol
    _mermaid(out)


def test_a_kip848_group_is_drawn_with_consumer_group_heartbeats(reconciles: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _diagram(capsys, str(reconciles))
    assert status == 2 and "the recording has: g, probe-2-0" in err  # the scenario's metadata probe is a group
    status, out, _ = _diagram(capsys, str(reconciles), "--group", "g")
    assert status == 0
    _, arrows = _mermaid(out)
    texts = [text for _, _, _, text in arrows]
    assert any(t.startswith("ConsumerGroupHeartbeat epoch 0") for t in texts)
    assert any("revoke" in t for t in texts)  # A must give partitions up before B gets them
    assert "Note over coordinator: epoch" in out


def test_svg_is_well_formed_xml_with_an_arrow_per_message(leave_and_rejoin: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "d.svg"
    status, _, _ = _diagram(capsys, str(leave_and_rejoin), "--format", "svg", "--out", str(out_file))
    assert status == 0
    root = ET.fromstring(out_file.read_text(encoding="utf-8"))
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    arrows = [line for line in root.iter(f"{ns}line") if "life" not in line.get("class", "")]
    _, mermaid = _diagram(capsys, str(leave_and_rejoin))[:2]
    assert len(arrows) == len(_mermaid(mermaid)[1])
    lanes = [t.text for t in root.iter(f"{ns}text") if t.get("class") == "lane"]
    assert lanes[0] == "coordinator" and len(lanes) == 3


def test_html_embeds_the_svg(leave_and_rejoin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _diagram(capsys, str(leave_and_rejoin), "--format", "html")
    assert status == 0
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    svg = out[out.index("<svg"):out.index("</svg>") + len("</svg>")]
    ET.fromstring(svg)


def test_an_unknown_group_or_generation_exits_2_naming_what_there_is(
        leave_and_rejoin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _diagram(capsys, str(leave_and_rejoin), "--group", "nope")
    assert status == 2 and out == "" and "no group 'nope' in the recording; it has: g" in err
    status, _, err = _diagram(capsys, str(leave_and_rejoin), "--generation", "99")
    assert status == 2 and "group 'g' has no generation 99; it has: 1, 2, 3" in err


def test_a_bad_recording_exits_2_with_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": "rbl-event/1", "group_id": "g"}\nnot json\n', encoding="utf-8")
    status, _, err = _diagram(capsys, str(bad))
    assert status == 2 and f"{bad}:2: not valid JSON" in err
    status, _, err = _diagram(capsys, str(tmp_path / "missing.jsonl"))
    assert status == 2 and "no such recording" in err


def test_a_recording_of_several_groups_needs_a_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [f'{{"schema_version": "rbl-event/1", "seq": {i}, "group_id": "{g}", "event_type": "REBALANCE_PREPARE", '
            f'"generation": 1}}' for i, g in enumerate(("g1", "g2"), 1)]
    both = tmp_path / "two.jsonl"
    both.write_text("\n".join(rows) + "\n", encoding="utf-8")
    status, _, err = _diagram(capsys, str(both))
    assert status == 2 and "choose a group with --group; the recording has: g1, g2" in err
    assert _diagram(capsys, str(both), "--group", "g2")[0] == 0


def test_a_recording_of_real_clients_is_drawn_generation_by_generation(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's recording (kafka-python consumers, made before heartbeats answered REBALANCE_IN_PROGRESS were
    rows): how members learnt of each rebalance is inferred, drawn with open arrow heads."""
    demo = Path(__file__).resolve().parents[1] / "unit" / "replay" / "samples" / "demo-recording.jsonl"
    status, out, _ = _diagram(capsys, str(demo), "--group", "demo-group")
    assert status == 0
    lines = out.splitlines()
    titles = [lines[i + 1].removeprefix("    Note over coordinator: ") for i, line in enumerate(lines)
              if line.startswith("    rect ")]
    assert titles == [f"generation {n} (range)" for n in range(1, 6)] + ["generation 6"]
    participants, arrows = _mermaid(out)
    assert [label.rsplit("-", 1)[0] for label in participants.values()] == [
        "coordinator", "consumer-1", "consumer-2", "consumer-3", "crasher", "static-1", "static-1"]
    assert ("consumer-2-c778a396", "-)", "coordinator", "Heartbeat") in arrows
    assert "no Heartbeat within the session timeout: expired (session_timeout)" in out  # the crasher
    assert "static member replaced: static-1-edca2c84 is fenced" in out
