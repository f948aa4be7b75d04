"""What every format shares: event timestamps, time zones, log4j-style layouts, partitions.

Events are canonical rows (``docs/event-schema.md``) as dicts, in the order a recording
holds them (its ``seq`` order); the renderers keep that order and never sort.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from rebalance_lab.clients.assignors.java_hashmap import java_str_key
from rebalance_lab.coordinator.routing import partition_for

Event = Mapping[str, Any]
TopicPartitionRow = Mapping[str, Any]  # {"topic": str, "partition": int}

DEFAULT_OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FormatError(ValueError):
    """An option or an event a renderer cannot use (a clear one-line message)."""


def zone(name: str | tzinfo) -> tzinfo:
    """A zoneinfo name (``UTC``, ``Europe/Berlin``) as a tzinfo; FormatError if unknown."""
    if isinstance(name, tzinfo):
        return name
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise FormatError(f"unknown time zone {name!r} (expected a zoneinfo name such as UTC or "
                          "Europe/Berlin)") from None


def event_time(event: Event) -> datetime:
    """The event's ``ts``: ISO-8601 (a recording) or epoch milliseconds (hand-built events)."""
    ts = event.get("ts")
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        return _EPOCH + timedelta(milliseconds=ts)
    if not isinstance(ts, str):
        raise FormatError(f"event {event.get('seq', '?')} ({event.get('event_type')}) has no usable ts: {ts!r}")
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        raise FormatError(f"event {event.get('seq', '?')} has a ts that is not ISO-8601: {ts!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def epoch_ms(event: Event) -> int:
    """Milliseconds since the epoch; microseconds are truncated as Java's clock would have them."""
    return (event_time(event) - _EPOCH) // timedelta(milliseconds=1)


def log4j_date(when: datetime, tz: tzinfo) -> str:
    """log4j's default ``%d`` (ISO8601 layout): ``yyyy-MM-dd HH:mm:ss,SSS`` in local time, no zone."""
    local = when.astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M:%S},{local.microsecond // 1000:03d}"


def coord_partition(event: Event, offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The group's ``__consumer_offsets`` partition: the event's own, else Kafka's hash rule."""
    recorded = event.get("coord_partition")
    if isinstance(recorded, int):
        return recorded
    return partition_for(str(event["group_id"]), offsets_partitions)


def tp_sort_key(tp: TopicPartitionRow) -> tuple[bytes, int]:
    """Java's ``TopicPartitionComparator``: topic (``String.compareTo``), then partition."""
    return java_str_key(str(tp["topic"])), int(tp["partition"])


def tp_text(tp: TopicPartitionRow) -> str:
    """``TopicPartition.toString``."""
    return f"{tp['topic']}-{tp['partition']}"


def tp_list(tps: Iterable[TopicPartitionRow]) -> str:
    """A Java ``List<TopicPartition>``: ``[t-0, t-1]``."""
    return "[" + ", ".join(tp_text(tp) for tp in tps) + "]"


def grouped_by_topic(tps: Iterable[TopicPartitionRow]) -> list[tuple[str, list[int]]]:
    """Partitions grouped by topic in order of first appearance, as ``ConsumerProtocol`` writes them."""
    groups: dict[str, list[int]] = {}
    for tp in tps:
        groups.setdefault(str(tp["topic"]), []).append(int(tp["partition"]))
    return list(groups.items())


# ---------------------------------------------------------------- log4j-style layouts

_CONVERSION = re.compile(r"%(-?\d+)?([a-zA-Z%])(\{[^}]*\})?")
Part = Callable[[datetime, str, str, str], str]  # (time, level, message, logger) -> text


_NAMED_DATES = {"ISO8601": "yyyy-MM-dd'T'HH:mm:ss,SSS", "ABSOLUTE": "HH:mm:ss,SSS"}  # log4j2's names


class Layout:
    """A small subset of log4j's ``PatternLayout``: ``%d`` (log4j2's DEFAULT, the broker's
    ``yyyy-MM-dd HH:mm:ss,SSS``; ``%d{ISO8601}``, ``%d{ABSOLUTE}`` or a ``SimpleDateFormat``
    pattern of ``yyyy yy MM dd HH mm ss SSS`` and quoted text), ``%p``, ``%m``, ``%c``
    (``%c{1}`` = the class name), ``%t``, ``%n`` and ``%%``, each with an optional width
    (``%-5p``). A trailing ``%n`` is dropped: renderers yield lines without their separator."""

    def __init__(self, pattern: str, tz: tzinfo, thread: str = "main") -> None:
        self.pattern = pattern
        self._tz = tz
        self._thread = thread
        body = pattern[:-2] if pattern.endswith("%n") else pattern
        self._parts = self._compile(body)

    def _compile(self, body: str) -> list[Part]:
        parts: list[Part] = []
        at = 0
        for match in _CONVERSION.finditer(body):
            parts.append(_literal(body[at:match.start()]))
            parts.append(self._conversion(match.group(2), match.group(3), match.group(1)))
            at = match.end()
        tail = body[at:]
        if "%" in tail:
            raise FormatError(f"cannot read the layout {self.pattern!r} near {tail!r}")
        parts.append(_literal(tail))
        return parts

    def _conversion(self, char: str, option: str | None, width: str | None) -> Part:
        base = self._base(char, option[1:-1] if option else None)
        if not width:
            return base
        size = int(width)
        return lambda t, p, m, c: base(t, p, m, c).ljust(-size) if size < 0 else base(t, p, m, c).rjust(size)

    def _base(self, char: str, option: str | None) -> Part:
        simple: dict[str, Part] = {
            "p": lambda _t, p, _m, _c: p,
            "m": lambda _t, _p, m, _c: m,
            "t": lambda _t, _p, _m, _c: self._thread,
            "n": lambda _t, _p, _m, _c: "\n",
            "%": lambda _t, _p, _m, _c: "%",
        }
        if char in simple:
            return simple[char]
        if char == "c":
            if option not in (None, "1"):
                raise FormatError(f"the layout {self.pattern!r} uses %c{{{option}}}; only %c and %c{{1}} are supported")
            short = option == "1"
            return lambda _t, _p, _m, c: c.rsplit(".", 1)[-1] if short else c
        if char == "d":
            return self._date(option)
        raise FormatError(f"the layout {self.pattern!r} uses %{char}, which is not supported")

    def _date(self, option: str | None) -> Part:
        if option in (None, "DEFAULT"):
            return lambda t, _p, _m, _c: log4j_date(t, self._tz)
        fmt = _java_date_pattern(_NAMED_DATES.get(option or "", option or ""))
        return lambda t, _p, _m, _c: _java_date(t.astimezone(self._tz), fmt)

    def format(self, when: datetime, level: str, message: str, logger: str) -> str:
        return "".join(part(when, level, message, logger) for part in self._parts)


def _literal(text: str) -> Part:
    return lambda _t, _p, _m, _c: text


_DATE_FIELDS: dict[str, Callable[[datetime], str]] = {
    "yyyy": lambda t: f"{t.year:04d}", "yy": lambda t: f"{t.year % 100:02d}", "MM": lambda t: f"{t.month:02d}",
    "dd": lambda t: f"{t.day:02d}", "HH": lambda t: f"{t.hour:02d}", "mm": lambda t: f"{t.minute:02d}",
    "ss": lambda t: f"{t.second:02d}", "SSS": lambda t: f"{t.microsecond // 1000:03d}",
}
_DATE_TOKEN = re.compile(r"'((?:[^']|'')*)'|([a-zA-Z])\2*|[^a-zA-Z']+")


def _java_date_pattern(pattern: str) -> list[Callable[[datetime], str]]:
    """A ``SimpleDateFormat`` pattern made of ``yyyy yy MM dd HH mm ss SSS``, quoted text and punctuation."""
    tokens = list(_DATE_TOKEN.finditer(pattern))
    if sum(len(m.group(0)) for m in tokens) != len(pattern):
        raise FormatError(f"the date pattern {pattern!r} has an unclosed quote")
    parts: list[Callable[[datetime], str]] = []
    for match in tokens:
        token = match.group(0)
        if match.group(1) is not None:
            parts.append(_text(match.group(1).replace("''", "'") or "'"))  # '' is a quote, in quotes too
        elif match.group(2) is None:
            parts.append(_text(token))
        elif token in _DATE_FIELDS:
            parts.append(_DATE_FIELDS[token])
        else:
            raise FormatError(f"the date pattern {pattern!r} uses {token!r}; only yyyy yy MM dd HH mm ss SSS "
                              "are supported")
    return parts


def _text(text: str) -> Callable[[datetime], str]:
    return lambda _t: text


def _java_date(local: datetime, parts: list[Callable[[datetime], str]]) -> str:
    return "".join(part(local) for part in parts)


def broker_envelope(when: datetime, tz: tzinfo, level: str, message: str, logger: str) -> str:
    """The broker's ``[%d] %p %m (%c)`` (spec §2.1)."""
    return f"[{log4j_date(when, tz)}] {level} {message} ({logger})"
