"""Before a replay starts: is there anything to replay, and how big is it (issue 20 items 2 and 3)?

An SRE points ``replay`` at whatever is at hand: an empty file, a binary, a log of another
program, a ``server.log`` of a broker that coordinated no group. Such input yields no canonical
event, and Spark, started for nothing, used to end 14 s later with an Arrow type error. So the
driver looks first, in one pass that costs a fraction of a second for the usual inputs:

* each file's first lines are sniffed (:func:`~rebalance_lab.replay.sources.detect`): an empty,
  binary or unrecognised file is noted with its reason;
* a recognised file is parsed until its first canonical event, within a byte budget (a huge
  log whose coordinator lines are far in is left to the run, which then reports zero events itself).

:func:`scan` returns a :class:`Preflight`; when nothing can be replayed, :meth:`Preflight.problem`
is the one line the command prints before it exits with code 2. A file among good ones that
cannot be read is no reason to stop: the runners count it in the parse report, as before.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO

from rebalance_lab.replay.diagnostics import ParseReport

#: How many bytes of recognised input the driver parses while looking for a first event.
SCAN_BUDGET_BYTES = 64 * 1024 * 1024
_BINARY_SAMPLE = 8192
_MAX_NAMED = 3  # files named in the one-line explanation


@dataclass
class Preflight:
    """What the driver found: the inputs' total size and, per file without events, why."""

    total_bytes: int = 0
    has_events: bool = False
    complete: bool = True  # every recognised file was read to its end (False: the budget ran out first)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (file, why it gave nothing)

    def problem(self) -> str | None:
        """The one-line explanation when nothing can be replayed, else None."""
        if self.has_events or not self.complete:
            return None
        shown = "; ".join(f"{os.path.basename(name)}: {why}" for name, why in self.notes[:_MAX_NAMED])
        more = f"; and {len(self.notes) - _MAX_NAMED} more" if len(self.notes) > _MAX_NAMED else ""
        return (f"nothing to replay: no input holds a rebalance event ({shown}{more}); give a broker server.log "
                f"with group-coordinator lines, an offsets dump, a consumer log or an emulator recording")


def _is_binary(path: str) -> bool:
    with open(path, "rb") as stream:
        head = stream.read(_BINARY_SAMPLE)
    if head[:2] == b"\x1f\x8b":  # gzip: the sniffer reads through it
        return False
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # not just a character cut at the sample's end
    return False


def _scan_file(path: str, fmt: str, budget: int) -> tuple[bool, bool, str]:
    """(found an event, read to the end, why nothing) for one file."""
    from rebalance_lab.replay.sources import (
        FORMATS,
        SNIFF_LINES,
        SourceContext,
        UnknownFormatError,
        detect,
        load_adapters,
        open_text,
    )

    if os.path.getsize(path) == 0:
        return False, True, "empty"
    if _is_binary(path):
        return False, True, "binary, not text"
    load_adapters()
    report = ParseReport()
    with open_text(path) as stream:
        head = list(itertools.islice(stream, SNIFF_LINES))
        try:
            name = detect(head) if fmt == "auto" else fmt
        except UnknownFormatError:
            first = next((line.strip() for line in head if line.strip()), "")
            return False, True, f"no known format (first line {first[:60]!r})" if first else "blank"
        read = sum(len(line) for line in head)
        lines = itertools.chain(head, _budgeted(stream, budget - read))
        for _ in FORMATS[name].parse(lines, SourceContext(name=path, report=report)):
            return True, True, ""
        ended = stream.read(1) == ""
    what = {"broker-log": "no group-coordinator lines", "client-log": "no consumer group lines"}
    return False, ended, f"{name}, but {what.get(name, 'no group events')} ({report.lines} lines)"


def _budgeted(stream: IO[str], budget: int) -> Iterator[str]:
    """The stream's lines until ``budget`` characters have been read."""
    left = budget
    for line in stream:
        yield line
        left -= len(line)
        if left <= 0:
            return


def scan(files: Sequence[str], fmt: str = "auto", budget: int = SCAN_BUDGET_BYTES) -> Preflight:
    """Look at ``files`` (already expanded) until one yields an event; see the module docstring."""
    result = Preflight(total_bytes=sum(os.path.getsize(path) for path in files))
    for path in files:
        if budget <= 0:
            result.complete = False
            break
        try:
            found, ended, why = _scan_file(path, fmt, budget)
        except OSError as exc:
            found, ended, why = False, True, f"unreadable ({exc.strerror or exc})"
        if found:
            result.has_events = True
            break
        result.complete = result.complete and ended
        result.notes.append((path, why))
        budget -= os.path.getsize(path)
    return result
