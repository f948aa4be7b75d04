"""Source adapters: each turns one kind of production evidence into canonical events (§7.1).

Every adapter is a pure function ``parse(lines, ctx) -> Iterator[event]`` over the
lines of one input, counting what it reads in ``ctx.report`` (see
:mod:`rebalance_lab.replay.diagnostics`): an unparseable line is counted and
sampled, never dropped silently and never fatal. :func:`parse_file` opens a file
(plain or ``.gz``), picks the adapter (``--format auto`` sniffs the first lines)
and is what both the Spark pipeline and the single-process runner call per file.
"""

from __future__ import annotations

import gzip
import io
import itertools
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rebalance_lab.replay.diagnostics import ParseReport


@dataclass
class SourceContext:
    """Per-input settings and the report an adapter writes into."""

    name: str = "<input>"  # the file name used in source_ref (file:line)
    tz: str = "UTC"  # zone of broker/client log timestamps (they carry none, §2.1)
    cluster_id: str = "default"  # for sources that do not name their cluster
    broker_id: int | None = None  # for sources that do not name their broker
    report: ParseReport = field(default_factory=ParseReport)
    options: dict[str, Any] = field(default_factory=dict)  # adapter-specific (e.g. a client-log envelope regex)
    #: Member rows as tuples where an adapter makes them (the dump-log adapter's fast path), in the form of
    #: :mod:`rebalance_lab.replay.member_rows`: what the Spark tasks ship; the single process's report reads dicts.
    compact_members: bool = False

    def ref(self, line_no: int) -> str:
        return f"{self.name}:{line_no}"


Parser = Callable[[Iterable[str], SourceContext], Iterator[dict[str, Any]]]
Sniffer = Callable[[list[str]], bool]


@dataclass(frozen=True)
class Format:
    name: str
    source: str  # the canonical ``source`` column value it produces
    parse: Parser
    sniff: Sniffer
    description: str
    #: The adapter interns the :data:`SHARED_COLUMNS` of its events itself (where it makes them, without a
    #: second pass over every event); otherwise :func:`parse_file` does.
    interns: bool = False


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    FORMATS[fmt.name] = fmt
    return fmt


class UnknownFormatError(ValueError):
    pass


def open_text(path: str | Path) -> IO[str]:
    """A text stream over a plain or gzip file (undecodable bytes replaced, then reported by the parser)."""
    raw = Path(path).open("rb")  # noqa: SIM115 - the returned wrapper owns and closes it
    if raw.peek(2)[:2] == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="replace")
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


# A broker's server.log can open with a multi-line KafkaConfig dump of a few hundred lines before the first
# complete envelope; the sniffers need to see past it.
SNIFF_LINES = 1000


def detect(lines: list[str]) -> str:
    """The format of an input from its first lines; raises :class:`UnknownFormatError`.

    The sniffers are mutually exclusive (each sample format is tested against all of them), so
    the registry's order does not matter.
    """
    load_adapters()
    for fmt in FORMATS.values():
        if fmt.sniff(lines):
            return fmt.name
    sample = next((line.strip() for line in lines if line.strip()), "")
    seen = f"first: {sample[:120]!r}" if sample else "the input is empty"
    raise UnknownFormatError(f"cannot tell the format from the first lines ({seen}); "
                             f"pass --format ({', '.join(sorted(FORMATS))})")


def parse_file(path: str | Path, fmt: str, ctx: SourceContext) -> Iterator[dict[str, Any]]:
    """Canonical events of one file; ``fmt`` may be ``auto``."""
    load_adapters()
    ctx.report.files += 1
    with open_text(path) as stream:
        lines = _readable(stream, ctx)
        head = list(itertools.islice(lines, SNIFF_LINES))
        name = detect(head) if fmt == "auto" else fmt
        if name not in FORMATS:
            raise UnknownFormatError(f"unknown format {fmt!r}; known: {', '.join(sorted(FORMATS))}")
        adapter = FORMATS[name]
        events = adapter.parse(itertools.chain(head, lines), ctx)
        yield from events if adapter.interns else shared_strings(events)


#: Event columns whose values a group's events repeat (ids, names): each is kept once (``sys.intern``).
SHARED_COLUMNS = ("group_id", "member_id", "leader_id", "group_instance_id", "client_id", "client_host", "protocol")


def shared_strings(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Events with their repeated strings interned: a group's events pickle each id once on their way to
    its replay task, and the model's dict lookups by member id compare pointers first."""
    for event in events:
        yield intern_columns(event)


def intern_columns(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its :data:`SHARED_COLUMNS` interned (in place)."""
    intern = sys.intern
    for column in SHARED_COLUMNS:
        value = event.get(column)
        if value.__class__ is str:
            event[column] = intern(value)
    return event


def _readable(stream: IO[str], ctx: SourceContext) -> Iterator[str]:
    """The stream's lines up to where it cannot be read any more: a truncated or corrupt ``.gz``
    (a rotated log copied while being written) ends the input with one unparsable entry, not an error."""
    try:
        yield from stream
    except (EOFError, OSError, zlib.error) as exc:
        ctx.report.unparsable(ctx.name, "unreadable input (truncated or corrupt gzip?)", f"{type(exc).__name__}: {exc}")


def load_adapters() -> None:
    """Import the adapter modules (each registers itself)."""
    from rebalance_lab.replay.sources import (  # noqa: F401
        broker_log,
        client_log,
        console_json,
        dump_log,
        emulator,
    )
