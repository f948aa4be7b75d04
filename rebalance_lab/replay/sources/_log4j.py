"""The log4j side of Kafka's logs, shared by the broker and client log adapters (split from broker_log.py).

* :class:`LocalClock`: wall-clock log times without a zone to epoch microseconds UTC;
* the ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)`` envelope and its continuation lines;
* the sniffers' evidence: how many lines of an input's head are broker lines and how many
  carry the Java consumer's ``[Consumer clientId=…]`` log context.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

# --- time -----------------------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_WALL = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", re.ASCII)
#: ``SSS`` (exactly three ASCII digits) -> microseconds: one lookup instead of a check and a conversion per line
MILLIS_US = {f"{ms:03d}": ms * 1000 for ms in range(1000)}
_SECONDS = {f"{s:02d}": s for s in range(60)}  # ``ss``, the same way
_FALLBACK_SLACK_S = 60  # how far a line may run behind the previous one before a repeated hour is assumed


class LocalClock:
    """Wall-clock log times (no zone) to epoch microseconds UTC in one ``zoneinfo`` zone.

    Three caches keep this cheap: the last second (log lines come in time order, so most lines
    cost a slice, a compare and a lookup), the last minute of an hour with a single, unambiguous
    UTC offset (a new second in it costs a compare and a lookup) and the last hour's UTC offset
    (a new minute costs two ``int`` calls; ``zoneinfo`` runs once per hour). An hour whose offset
    changes inside it (a transition off the hour, as in zones with half-hour shifts) is converted
    second by second.

    A wall time repeated by a DST fall-back is ambiguous: the first reading (``fold=0``) is used
    unless it would put the line more than a minute before the previous distinct second, in which
    case the log has entered the repeated hour and the second reading (``fold=1``) is used. Wall
    times inside a spring-forward gap cannot be logged; they convert as ``zoneinfo`` does.
    """

    def __init__(self, tz: str) -> None:
        try:
            self._zone = ZoneInfo(tz)
        except (ValueError, KeyError) as exc:  # ZoneInfoNotFoundError is a KeyError
            raise ValueError(f"unknown time zone {tz!r} (expected a zoneinfo name such as UTC or Europe/Berlin)") \
                from exc
        self._second_key = ""
        self._second_us = 0
        self._minute_key = ""  # "yyyy-MM-dd HH:mm:" of a minute whose wall times map to one reading only
        self._minute = 0  # its start in epoch seconds
        self._hour_key = ""
        self._hour_start = datetime(1970, 1, 1, tzinfo=self._zone)
        self._hour = (0, 0)  # epoch seconds of the hour's start: first and second reading (equal unless repeated)
        self._uniform = True  # one UTC offset (per reading) through the whole hour
        self._last: int | None = None  # epoch seconds of the previous distinct second

    def log4j(self, text: str) -> int | None:
        """``yyyy-MM-dd HH:mm:ss,SSS`` to epoch µs; None if it is not such a time."""
        if len(text) != 23 or text[19] != ",":
            return None
        millis_us = MILLIS_US.get(text[20:])
        if millis_us is None:
            return None
        key = text[:19]
        if key != self._second_key:
            seconds = self.wall(key)
            if seconds is None:
                return None
            self._second_key, self._second_us = key, seconds * 1_000_000
        return self._second_us + millis_us

    def iso(self, text: str) -> int | None:
        """An ISO-8601 time (``T`` or space, ``.`` or ``,`` fraction, optional offset/``Z``) to epoch µs;
        a time without an offset is wall-clock time in this zone."""
        try:
            moment = datetime.fromisoformat(text.replace(",", "."))
        except ValueError:
            return None
        if moment.tzinfo is not None:
            return (moment - _EPOCH) // timedelta(microseconds=1)
        seconds = self.wall(f"{moment:%Y-%m-%d %H:%M:%S}")
        return None if seconds is None else seconds * 1_000_000 + moment.microsecond

    def any(self, text: str) -> int | None:
        """The log4j form if it is one, else ISO-8601."""
        stamp = self.log4j(text)
        return stamp if stamp is not None else self.iso(text)

    def wall(self, key: str) -> int | None:
        """``yyyy-MM-dd HH:mm:ss`` (or with ``T``) wall time to epoch seconds; None if invalid."""
        if key[:17] == self._minute_key and len(key) == 19:
            # The minute was validated and converted, and its hour has no repeated reading (so the fold rule
            # below cannot apply): only the seconds are new. The hour caches may have moved on since; they
            # would be recomputed to the same values.
            second = _SECONDS.get(key[17:])
            if second is not None:
                seconds = self._last = self._minute + second
                return seconds
        if not _WALL.fullmatch(key):
            return None
        minute, second = int(key[14:16]), int(key[17:19])
        if minute > 59 or second > 59:
            return None
        if key[:13] != self._hour_key and not self._enter_hour(key[:13]):
            return None
        if not self._uniform:
            return self._resolve(self._hour_start.replace(minute=minute, second=second))
        first, repeated = self._hour
        seconds = first + minute * 60 + second
        if repeated == first:
            self._minute_key, self._minute = key[:17], first + minute * 60
        elif self._last is not None and seconds < self._last - _FALLBACK_SLACK_S:
            seconds = repeated + minute * 60 + second
        self._last = seconds
        return seconds

    def _enter_hour(self, key: str) -> bool:
        try:
            start = datetime(int(key[:4]), int(key[5:7]), int(key[8:10]), int(key[11:13]), tzinfo=self._zone)
        except ValueError:
            return False
        end = start.replace(minute=59, second=59)
        first, repeated = (start - _EPOCH) // _SECOND, (start.replace(fold=1) - _EPOCH) // _SECOND
        self._uniform = ((end - _EPOCH) // _SECOND - first == 3599
                         and (end.replace(fold=1) - _EPOCH) // _SECOND - repeated == 3599)
        self._hour_key, self._hour_start, self._hour = key, start, (first, repeated)
        return True

    def _resolve(self, wall: datetime) -> int:
        seconds = (wall - _EPOCH) // _SECOND
        later = (wall.replace(fold=1) - _EPOCH) // _SECOND
        if later != seconds and self._last is not None and seconds < self._last - _FALLBACK_SLACK_S:
            seconds = later
        self._last = seconds
        return seconds


# --- envelope (§2.1) -------------------------------------------------------------------------------------------------

LOGGER_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[\w$]+)*", re.ASCII)
_EXCEPTION = re.compile(r"(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable)\b")
#: ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL ``: the time is only sliced here (checked when a line yields an event)
ENVELOPE = re.compile(r"\[.{23}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ", re.DOTALL)
HEAD = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")


def is_continuation(line: str) -> bool:
    """A line that continues the previous log record: indented, blank, or a Java exception header."""
    return not line or line[0] in " \t" or line.startswith("Caused by: ") or _EXCEPTION.match(line) is not None


# --- sniffing ---------------------------------------------------------------------------------------------------------

_CLIENT_PREFIXES = ("[Consumer clientId=", "[Consumer instanceId=")
_CLIENT_MARK = "[Consumer "  # in both: one test for the lines that have neither
_CLIENT_LOGGERS = ("org.apache.kafka.clients.", "org.apache.kafka.common.")


def evidence(lines: list[str]) -> tuple[int, int]:
    """(broker lines, consumer-client lines) among the first lines of an input, for the two log sniffers.

    A broker line is a complete broker envelope whose logger is a broker class (``kafka.…``,
    ``org.apache.kafka.…`` outside the client packages, ``state.change.logger``); a client line carries the
    Java consumer's LogContext prefix. broker-log wins when it has more; client-log otherwise.
    """
    broker = client = 0
    for line in lines:
        if _CLIENT_MARK in line and any(prefix in line for prefix in _CLIENT_PREFIXES):
            client += 1
            continue
        text = line.rstrip("\r\n")
        tail = text.rfind(" (")
        if tail < 0 or not text.endswith(")") or not HEAD.match(text):
            continue
        logger = text[tail + 2:-1]
        if logger.startswith(("kafka.", "state.change.logger")) or (
                logger.startswith("org.apache.kafka.") and not logger.startswith(_CLIENT_LOGGERS)):
            broker += 1
    return broker, client


def first_head(lines: list[str]) -> str:
    """The first line of an input that is not blank and not a continuation line ("" if none)."""
    for line in lines:
        text = line.rstrip("\r\n")
        if text.strip() and not is_continuation(text):
            return text
    return ""


def starts_json(lines: list[str]) -> bool:
    """The input's first non-blank line opens a JSON object (the emulator's and console-json's inputs)."""
    return next((line.strip() for line in lines if line.strip()), "").startswith("{")
