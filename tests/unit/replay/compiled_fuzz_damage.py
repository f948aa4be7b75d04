"""Damaged copies of the real captured replay inputs, for the compiled-versus-pure fuzz test (issue 20).

A case is one sample set (a broker log of 4.4.0 or 3.9.2, an offsets dump, a Java client log, or a log with
its dump) with one to four of :data:`DAMAGES` applied to one of its files, chosen by a ``random.Random``
seeded from the run's seed and the case number: the same seed gives the same bytes on every machine.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "samples"

#: The sample sets a case starts from: the compiled parsers' inputs (broker logs, dumps) and Java client logs and
#: console JSON (their parsers are Python, the fold they feed is compiled), alone and a log with its dump.
SETS: tuple[tuple[str, ...], ...] = (
    ("evidence-kafka-4.4.0/server.log",),
    ("evidence-kafka-3.9.2/server.log",),
    ("evidence-kip848-4.4.0/server.log",),
    ("evidence-kafka-4.4.0/offsets.dump.txt",),
    ("evidence-kafka-3.9.2/offsets.dump.txt",),
    ("evidence-kip848-4.4.0/offsets.dump.txt",),
    ("evidence-java-client-4.4.0/client.log",),
    ("evidence-kafka-4.4.0/server.log", "evidence-kafka-4.4.0/offsets.dump.txt"),
    ("evidence-kip848-4.4.0/server.log", "evidence-kip848-4.4.0/offsets.dump.txt"),
    ("broker-java-4x.log",), ("broker-scala-2x.log",), ("broker-scala-3x.log",),
    ("kafka-4.4-consumer-group.log",), ("kafka-4.4-consumer-group.dump.txt",),
    ("dump-log-3.7.txt",), ("dump-log-3.8.txt",), ("client-static-coop.log",), ("client-dynamic.log",),
    ("console-4x.json",),
)
WHATIFS: tuple[tuple[str, ...], ...] = ((), ("cooperative-sticky",), ("range", "sticky"), ("roundrobin+static",))

#: Numbers that break what a parser assumes of a number: past 64 bits, negative, empty, not ASCII digits, and
#: longer than the 4,300 digits ``int()`` converts.
NUMBERS = (b"9223372036854775808", b"18446744073709551617", b"99999999999999999999999999999", b"-1", b"-0",
           b"-9223372036854775809", b"0", b"00", b"007", b"1e5", b"1.5", b"", b"x", b"NaN", b"\xd9\xa3",
           b"\xef\xbc\x91\xef\xbc\x92", b"2147483648", b"-2147483649", b"4294967296", b"1" * 400, b"1" * 5000)
#: JSON values of every type, for a field of another (a compiled reader trusts its annotations).
JSON_VALUES = (b"null", b"true", b"false", b'""', b'"x"', b"-1", b"0", b"1.5", b"1e400", b"[]", b"{}", b"[1]",
               b'{"a":1}', b"9223372036854775808", b"-9223372036854775809", b'"9223372036854775808"', b'"-1"',
               b'"\\u0000"', b'"\\ud800"', b"123456789012345678901234567890")
BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc", b"\xf4\x90\x80\x80")

_NUMBER = re.compile(rb"-?\d+")
_JSON_VALUE = re.compile(rb'":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|null|true|false)')
_TOKEN = re.compile(rb"[^ ,:=()\[\]{}\"]+")

Lines = list[bytes]


def _pick_line(rng: random.Random, lines: Lines) -> int:
    return rng.randrange(len(lines))


def _replace_match(rng: random.Random, lines: Lines, pattern: re.Pattern[bytes], values: tuple[bytes, ...],
                   group: int = 0) -> str:
    at = _pick_line(rng, lines)
    found = list(pattern.finditer(lines[at]))
    if not found:
        return "none"
    match = rng.choice(found)
    value = rng.choice(values)
    lines[at] = lines[at][:match.start(group)] + value + lines[at][match.end(group):]
    return f"line {at}: {match[group][:40]!r} -> {value[:40]!r}"


def truncate(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    cut = rng.randrange(len(lines[at]) + 1)
    lines[at] = lines[at][:cut]
    return f"line {at} cut at {cut}"


def number(rng: random.Random, lines: Lines) -> str:
    return _replace_match(rng, lines, _NUMBER, NUMBERS)


def json_value(rng: random.Random, lines: Lines) -> str:
    return _replace_match(rng, lines, _JSON_VALUE, JSON_VALUES, group=1)


def empty_token(rng: random.Random, lines: Lines) -> str:
    return _replace_match(rng, lines, _TOKEN, (b"",))


def swap_fields(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    fields = lines[at].split(b" ")
    if len(fields) < 2:
        return "none"
    i, j = rng.randrange(len(fields)), rng.randrange(len(fields))
    fields[i], fields[j] = fields[j], fields[i]
    lines[at] = b" ".join(fields)
    return f"line {at}: fields {i}<->{j}"


def delete_field(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    fields = lines[at].split(b" ")
    i = rng.randrange(len(fields))
    del fields[i]
    lines[at] = b" ".join(fields)
    return f"line {at}: field {i} deleted"


def _insert(rng: random.Random, lines: Lines, values: tuple[bytes, ...]) -> str:
    at = _pick_line(rng, lines)
    where = rng.randrange(len(lines[at]) + 1)
    value = rng.choice(values)
    lines[at] = lines[at][:where] + value + lines[at][where:]
    return f"line {at}: {value[:20]!r} at {where}"


def bad_utf8(rng: random.Random, lines: Lines) -> str:
    return _insert(rng, lines, BAD_BYTES)


def nul(rng: random.Random, lines: Lines) -> str:
    return _insert(rng, lines, (b"\x00", b"\x00" * 3, b"\r", b"\x0b", b"\x1c", b"\x85", b"\xe2\x80\xa8"))


def long_line(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    fields = _TOKEN.findall(lines[at]) or [b"x"]
    filler = rng.choice(fields)[:40] * rng.choice((1000, 5000))
    where = rng.randrange(len(lines[at]) + 1)
    lines[at] = lines[at][:where] + filler + lines[at][where:]
    return f"line {at}: {len(filler)} bytes at {where}"


def duplicate(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    to = rng.randrange(len(lines) + 1)
    lines.insert(to, lines[at])
    return f"line {at} copied to {to}"


def reorder(rng: random.Random, lines: Lines) -> str:
    i, j = _pick_line(rng, lines), _pick_line(rng, lines)
    lines[i], lines[j] = lines[j], lines[i]
    return f"lines {i}<->{j}"


def delete_line(rng: random.Random, lines: Lines) -> str:
    at = _pick_line(rng, lines)
    del lines[at]
    return f"line {at} deleted"


Damage = Callable[[random.Random, Lines], str]
DAMAGES: tuple[Damage, ...] = (truncate, number, number, json_value, json_value, empty_token, swap_fields,
                               delete_field, bad_utf8, nul, long_line, duplicate, reorder, delete_line)


def damaged(rng: random.Random, data: bytes) -> tuple[bytes, list[str]]:
    """``data`` with one to four damages; what was done, for the failure message."""
    lines = data.split(b"\n")
    done = []
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        if not lines:
            lines = [b""]
        damage = rng.choice(DAMAGES)
        done.append(f"{damage.__name__}: {damage(rng, lines)}")
    return b"\n".join(lines), done


def write_case(seed: int, number_: int, folder: Path) -> dict[str, object]:
    """Case ``number_`` of the run ``seed`` written under ``folder``: {id, files, whatif, damage}."""
    rng = random.Random(f"{seed}:{number_}")
    chosen = rng.choice(SETS)
    target = rng.randrange(len(chosen))
    folder.mkdir(parents=True, exist_ok=True)
    files, damage = [], []
    for index, name in enumerate(chosen):
        data = (SAMPLES / name).read_bytes()
        if index == target:
            data, damage = damaged(rng, data)
        path = folder / f"{number_}-{index}-{Path(name).name}"
        path.write_bytes(data)
        files.append(str(path))
    return {"id": number_, "files": files, "whatif": list(rng.choice(WHATIFS)), "sample": list(chosen),
            "damage": damage}
