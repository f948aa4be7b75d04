"""Damaged ``serve --record`` recordings, seeded: every reader of a recording gives a counted diagnostic or a one-line
error, never a traceback or a hang, and loses nothing that is intact.

The readers: ``replay`` (the emulator source, then the model, the what-if and the Parquet writer), ``export`` (every
format) and ``diagram``. Each case damages a real recording (a recording of real groups made by a test run, and the
demo's): truncated lines, wrong JSON types in any field, huge numbers, lone surrogates, binary garbage, deep nesting,
an empty file. ``REBALANCE_LAB_FUZZ_SEED`` / ``REBALANCE_LAB_FUZZ_CASES`` run other seeds or more cases locally.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab import cli
from rebalance_lab.config import Flavor
from rebalance_lab.observe.formats import FORMATS
from rebalance_lab.replay.local import run_local
from tests.integration.test_export import play

SEED = int(os.environ.get("REBALANCE_LAB_FUZZ_SEED", "20261127"))
CASES = int(os.environ.get("REBALANCE_LAB_FUZZ_CASES", "200"))
CASE_LIMIT_S = 20  # one case's readers; an endless loop fails the case instead of hanging the suite
DEMO = Path(__file__).parents[1] / "replay" / "samples" / "demo-recording.jsonl"

_VALUES: list[Any] = [None, True, False, 0, -1, 2**31, -(2**31) - 1, 2**63, 10**30, -(10**30), 1e308, -1e308, 0.5,
                      "", "x", "\ud800", "\udfff\u0000", [], [1, "a"], {}, {"k": None}, [[[]]], "1970-01-01",
                      "NaN"]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """The lines of a real recording made now (two dynamic members and a static one, kafka-4) and of the demo's."""
    path = tmp_path_factory.mktemp("fuzz") / "rec.jsonl"
    asyncio.run(play(path, Flavor.KAFKA_4))
    made = path.read_text(encoding="utf-8").splitlines()
    assert len(made) > 20
    return [made, DEMO.read_text(encoding="utf-8").splitlines()]


# --- mutations: each returns the file's bytes and the indices of the lines it damaged ---------------------------------

def _retype(rng: random.Random, row: Any) -> Any:
    """``row`` with one value somewhere inside it replaced by a value of another JSON type."""
    if isinstance(row, dict) and row and rng.random() < 0.8:
        key = rng.choice(list(row))
        return {**row, key: _retype(rng, row[key])}
    if isinstance(row, list) and row and rng.random() < 0.8:
        i = rng.randrange(len(row))
        return [*row[:i], _retype(rng, row[i]), *row[i + 1:]]
    return rng.choice(_VALUES)


def _odd_ints(rng: random.Random, row: Any) -> Any:
    """Every integer of ``row`` (partition ids, generations, counts) replaced, each with a chance of one half."""
    if isinstance(row, dict):
        return {k: _odd_ints(rng, v) for k, v in row.items()}
    if isinstance(row, list):
        return [_odd_ints(rng, v) for v in row]
    if isinstance(row, int) and not isinstance(row, bool) and rng.random() < 0.5:
        return rng.choice([-(2**31), 2**31 - 1, 2_147_483_000, -1, 0, 1, 100_001])
    return row


def _encode(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")


def _truncate(rng: random.Random, line: str) -> str:
    return line[: rng.randrange(1, max(2, len(line)))]


def _compact(row: Any) -> str:
    return json.dumps(row, separators=(",", ":"))


def _huge(rng: random.Random, line: str) -> str:
    row = json.loads(line)
    key = rng.choice([k for k, v in row.items() if isinstance(v, int) and not isinstance(v, bool)] or list(row))
    text = _compact({**row, key: rng.choice([10**400, -(10**400), 2**64, 1e308])})
    return text.replace("1e+308", "1e999") if rng.random() < 0.3 else text  # 1e999: json reads infinity


def _surrogate(rng: random.Random, line: str) -> str:
    row = json.loads(line)
    key = rng.choice([k for k, v in row.items() if isinstance(v, str)] or list(row))
    text = json.dumps({**row, key: rng.choice(["\ud83d", "a\udc00b", "\ud800\ud800"])})  # escaped
    return json.dumps({**row, key: "\ud83d"}, ensure_ascii=False) if rng.random() < 0.5 else text  # raw: not UTF-8


def _nesting(rng: random.Random, line: str) -> str:
    depth = rng.choice([50, 5000, 200_000])
    return line[:-1] + ',"deep":' + "[" * depth + "]" * depth + "}"


def _odd_ts(rng: random.Random, line: str) -> str:
    row = json.loads(line)
    row["ts"] = rng.choice(["0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999-23:59", "2026-13-01",
                            "1970-01-01T00:00:00", "2026-11-27T04:00:00.000+14:00"])
    return _compact(row)


def _missing_key(rng: random.Random, line: str) -> str:
    row = json.loads(line)
    row.pop(rng.choice(list(row)))
    return _compact(row)


_LINE_MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    "truncate": _truncate,
    "retype": lambda rng, line: _compact(_retype(rng, json.loads(line))),
    "huge": _huge,
    "surrogate": _surrogate,
    "nesting": _nesting,
    "odd-int": lambda rng, line: _compact(_odd_ints(rng, json.loads(line))),  # in range, not what Kafka writes
    "odd-ts": _odd_ts,
    "missing-key": _missing_key,
    "not-object": lambda rng, _line: json.dumps(rng.choice([[1, 2], "text", 3, None, True])),
}
_KINDS = [*_LINE_MUTATIONS, "retype", "retype", "odd-int", "garbage", "empty", "truncate-last"]


def mutate(rng: random.Random, lines: list[str]) -> tuple[bytes, set[int], str]:
    """A damaged copy of ``lines`` as bytes, the indices of the lines damaged, and the kind of damage."""
    kind = rng.choice(_KINDS)
    out = list(lines)
    i = rng.randrange(len(out))
    if kind == "empty":
        return b"", set(range(len(lines))), kind
    if kind == "garbage":
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        return _encode(out[:i]) + blob + b"\n" + _encode(out[i + 1:]), {i}, kind
    if kind == "truncate-last":
        i = len(out) - 1
    out[i] = _LINE_MUTATIONS["truncate" if kind == "truncate-last" else kind](rng, out[i])
    return _encode(out), {i}, kind


# --- the readers ---------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _time_limit(seconds: int, what: str) -> Iterator[None]:
    def expired(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"{what} did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _cli(args: list[str]) -> tuple[int, str]:
    """``rebalance-lab ARGS`` in this process: its exit status and standard error."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli.main(args)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return status, err.getvalue()


def _check_cli(args: list[str]) -> None:
    status, err = _cli(args)
    assert status in (0, 2), f"exit {status}: {err[-1500:]}"
    assert "Traceback" not in err, err[-1500:]
    if status == 2:
        assert err.strip() and len(err.strip().splitlines()) == 1, f"not one line: {err[-1500:]}"


def _check_replay(path: Path, damaged: set[int], total: int, out: Path | None) -> None:
    result = run_local([path], "emulator", whatif=("range", "cooperative-sticky"), out_dir=out)
    assert result.errors == [], result.errors  # a group lost to an exception: data that was intact is lost
    report = result.report
    assert report.events + report.unparsed + report.ignored <= report.lines
    assert report.events >= total - len(damaged), (report.summary(), report.samples)  # nothing intact is lost


@contextlib.contextmanager
def _reader(name: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        raise AssertionError(f"{name}: {type(exc).__name__}: {exc}") from exc


def check_case(path: Path, damaged: set[int], total: int, number: int, work: Path) -> None:
    """Every reader over one damaged file: the replay each time (its CLI with the report every 10th case), two of
    the export formats and one diagram format in turn (all of them over every 6 cases), to stay within ~15 s."""
    full = number % 10 == 0
    names = list(FORMATS)
    formats = [names[number % len(names)], names[(number + 3) % len(names)]]
    diagram_format = ("mermaid", "svg", "html")[number % 3]
    with _reader("replay (run_local)"):
        _check_replay(path, damaged, total, work / "tables" if full else None)
    if full:  # the command as a user runs it: the report too
        with _reader("replay (CLI)"):
            _check_cli(["replay", "--engine", "local", "--quiet", "--events-jsonl", "--what-if", "range", "--out",
                        str(work / "replay"), str(path)])
    for fmt in formats:
        with _reader(f"export --as {fmt}"):
            _check_cli(["export", str(path), "--as", fmt, "--out", str(work / f"out.{fmt}")])
    with _reader(f"diagram --format {diagram_format}"):
        _check_cli(["diagram", str(path), "--group", "g", "--format", diagram_format, "--out", str(work / "d")])


def _cases(recordings: list[list[str]]) -> Iterator[tuple[int, bytes, set[int], str, int]]:
    rng = random.Random(SEED)
    for number in range(CASES):
        lines = recordings[number % len(recordings)]
        data, damaged, kind = mutate(rng, lines)
        yield number, data, damaged, kind, len(lines)


def test_damaged_recordings_give_counted_diagnostics_or_one_line_errors(
        recordings: list[list[str]], tmp_path: Path) -> None:
    failures: list[str] = []
    for number, data, damaged, kind, total in _cases(recordings):
        work = tmp_path / str(number)
        work.mkdir()
        path = work / "rec.jsonl"
        path.write_bytes(data)
        try:
            with _time_limit(CASE_LIMIT_S, f"case {number}"):
                check_case(path, damaged, total, number, work)
        except Exception as exc:  # every finding of the run is listed, not only the first
            failures.append(f"case {number} ({kind}, seed {SEED}): {type(exc).__name__}: {str(exc)[:400]}")
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:25])


