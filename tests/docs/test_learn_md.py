"""Every command of docs/learn.md runs as written: its exit status is 0 and its output has the line the
tutorial tells the reader to look for (issue 19 item 5).

A command is a line of a ```bash block; the ``# look for: TEXT`` line after it is what its output must contain
(an empty TEXT: the command writes a file, named by its ``--out``). The commands run in order in one directory,
as a reader would run them (a later ``diagram`` reads an earlier ``play --record``), in this process through
the command line's ``main`` (``< /dev/null`` gives it an empty standard input).
"""

from __future__ import annotations

import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from rebalance_lab.cli import main

LEARN = Path(__file__).resolve().parents[2] / "docs" / "learn.md"
_BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Command:
    line: str
    look_for: str


def commands(text: str) -> list[Command]:
    found: list[Command] = []
    for block in _BLOCK.findall(text):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("#") or not line.strip():
                continue
            follow = lines[i + 1] if i + 1 < len(lines) else ""
            assert follow.startswith("# look for:"), f"{line!r} has no '# look for:' line after it"
            found.append(Command(line, follow.removeprefix("# look for:").strip()))
    return found


COMMANDS = commands(LEARN.read_text(encoding="utf-8"))


def test_the_tutorial_has_every_exercise_the_issue_asks_for() -> None:
    lines = [c.line for c in COMMANDS]
    assert all(line.startswith("rebalance-lab ") for line in lines)
    expected = ["play protocol_tie_break --flavor kafka-4", "play protocol_tie_break --flavor kafka-3",
                "play lesson_rolling_assignor_change", "play lesson_static_restart_within_session_timeout",
                "play lesson_static_restart_after_session_timeout", "play lesson_cooperative_two_rounds",
                "play kip848_second_member_reconciles", "diagram coop.jsonl", "--step < /dev/null"]
    for fragment in expected:
        assert any(fragment in line for line in lines), fragment


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("learn")


@pytest.mark.parametrize("command", COMMANDS, ids=[c.line.removeprefix("rebalance-lab ") for c in COMMANDS])
def test_the_tutorial_command_runs_and_prints_what_it_says(
        command: Command, workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(workdir)
    words = shlex.split(command.line)
    if words[-2:] == ["<", "/dev/null"]:
        words = words[:-2]
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
    status = main(words[1:])
    out, err = capsys.readouterr()
    assert status == 0, err
    if command.look_for:
        assert command.look_for in out, out[-3000:]
    else:
        written = workdir / words[words.index("--out") + 1]
        assert written.stat().st_size > 0


README = Path(__file__).resolve().parents[2] / "README.md"
_README_SECTION = re.compile(r"^## Learning the protocol.*?^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_readmes_play_and_diagram_commands_are_tutorial_commands_so_they_run_too() -> None:
    section = _README_SECTION.search(README.read_text(encoding="utf-8"))
    assert section is not None, "README.md has no 'Learning the protocol' section with commands"
    readme_commands = [line for line in section.group(1).splitlines() if line.strip()]
    assert len(readme_commands) == 4
    assert set(readme_commands) <= {c.line for c in COMMANDS}
