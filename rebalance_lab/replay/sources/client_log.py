"""Java consumer log lines (``ConsumerCoordinator``/``AbstractCoordinator``, spec §3.1; KIP-848 §3.2) to events.

The line envelope is the application's, so it is configurable: ``ctx.options["envelope"]`` is either a
preset name (``log4j``, the default: ``[%d] %p %m (%c)``; ``logback``: ``%d [%thread] %-5level %logger -
%msg``) or a regex with the named groups ``ts``, ``level`` and ``msg`` (``logger`` optional), matched with
``re.DOTALL``. ``ts`` may be ``yyyy-MM-dd HH:mm:ss,SSS`` or ISO-8601; times without an offset are in
``ctx.tz``. A record is a head line plus its continuation lines (indented, blank, exception headers):
that is how the multi-line ``Updating assignment with`` block and stack traces are kept together, and
how a ``%m (%c)`` layout whose message ends in a newline still finds its logger.

Only messages with the consumer's LogContext prefix are read: ``[Consumer clientId=C, groupId=G] `` or
``[Consumer instanceId=I, clientId=C, groupId=G] ``. State is kept per (client id, group): the member id
and generation of the latest ``joined`` line fill the lines that name none (``member_id`` of partition
events, poll timeouts), and a ``Request joining group due to`` reason waits for the join it causes.

=====================================================  ==============================================
message                                                event_type, columns
=====================================================  ==============================================
``(Re-)joining group``                                 CLIENT_JOIN_START; client_reason = the reason
                                                       of the ``Request joining group due to: …``
                                                       line before it (3.0+), if any
``Request joining group due to: …``                    none (ignored): its reason goes to the next
                                                       CLIENT_JOIN_START (one event per join)
``Successfully joined group with generation …``        CLIENT_JOINED: generation, member_id,
                                                       protocol (the chosen assignor; <= 2.6 gives the
                                                       generation only)
``Successfully synced group in generation …``          CLIENT_SYNCED: generation, member_id, protocol
``Finished assignment for group at generation N: {…}``  CLIENT_LEADER_ASSIGNMENT: generation,
                                                       leader_id (this member), n_members, members[]
                                                       {member_id, assignment}
``Adding newly assigned partitions: …`` (``Setting…``)  CLIENT_PARTITIONS_ASSIGNED: partitions (may be
                                                       empty)
``Revoke previously assigned partitions …``            CLIENT_PARTITIONS_REVOKED: partitions
(``Revoking…``, also the KIP-848 consumer's)
``Lost previously assigned partitions …``              CLIENT_PARTITIONS_LOST: partitions
``Member M sending LeaveGroup request … due to R``     MEMBER_LEFT (the client's view): member_id,
                                                       client_reason = R, reason_code ``member_leave``
WARN ``consumer poll timeout has expired…``            CLIENT_POLL_TIMEOUT: reason_code
                                                       ``poll_timeout``
``Member M with epoch E transitioned from S to T.``    K848_MEMBER_STATE: member_id, generation = E,
                                                       raw = T; the client is then ``consumer`` kind
=====================================================  ==============================================

Partition events, poll timeouts and leaves carry the client's latest generation and member id.
Every event has client_id, group_instance_id (when the prefix has one), ``ts_kind`` ``log_line`` and
group_kind ``classic`` (``consumer`` once the client logged a KIP-848 state line).

Ignored: lines without the LogContext prefix (other loggers, the application), continuation lines,
the cooperative ``Updating assignment with`` block (the ``Revoke…``/``Adding newly assigned
partitions`` lines that ``ConsumerCoordinator.onJoinComplete`` logs right after it carry the same
revoked and added sets: mapping the block too would count them twice), ``Resetting generation …``
(it clears the member id/generation state), and every other consumer line (failures, heartbeat,
``Notifying assignor``, ``Skipped assignment for returning static leader``, ``Giving away all assigned
partitions as lost…``: the ``Lost…`` line follows).

Unparsable: a line that does not match the envelope (``truncated line`` when it carries the LogContext
prefix, ``no envelope`` otherwise), a bad timestamp, and a known message whose pattern fails
(``malformed <kind>``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rebalance_lab.replay.event_rows import SCHEMA_VERSION, EventError, parse_tp
from rebalance_lab.replay.sources import Format, SourceContext, register
from rebalance_lab.replay.sources._log4j import (
    HEAD,
    LocalClock,
    evidence,
    first_head,
    is_continuation,
    starts_json,
)
from rebalance_lab.replay.sources.dump_log import is_dump_line

FORMAT_NAME = "client-log"
SOURCE = "client_log"

Event = dict[str, Any]

ENVELOPES = {
    "log4j": r"\[(?P<ts>[^\]]+)\] (?P<level>[A-Z]+) (?P<msg>.*) \((?P<logger>[^()\s]*)\)\s*$",
    "logback": r"(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,]\d{3}\S*) \[(?P<thread>[^\]]*)\] (?P<level>[A-Z]+) +"
               r"(?P<logger>\S+) - (?P<msg>.*?)\s*$",
}
_PREFIX = re.compile(r"\[Consumer (?:instanceId=(.*?), )?clientId=(.*?), groupId=(.*?)\] (.*)", re.DOTALL)
_GENERATION = r"Generation\{generationId=(-?\d+), memberId='([^']*)', protocol='([^']*)'\}"

_PATTERNS: dict[str, re.Pattern[str]] = {name: re.compile(pattern, re.DOTALL) for name, pattern in {
    "joined": rf"Successfully joined group with generation (?:{_GENERATION}|(-?\d+))\s*$",
    "synced": rf"Successfully synced group in generation {_GENERATION}\s*$",
    "leader_assignment": r"Finished assignment for group at generation (-?\d+): \{(.*)\}\s*$",
    "partitions": r"(?:Adding|Setting|Revoke|Revoking|Lost) (?:newly|previously) assigned partitions:? ?"
                  r"\[?(.*?)\]?\s*$",
    "leave": r"Member (\S+) sending LeaveGroup request to coordinator (.+?) due to (.*?)\s*$",
    "k848_state": r"Member (\S+) with epoch (-?\d+) transitioned from (\w+) to (\w+)\.?\s*$",
    "join_request": r"Request joining group due to: (.*?)\s*$",
    "reset": r"Resetting generation (and member id )?due to",
    "any": r"",
}.items()}
_ASSIGNMENT = re.compile(r"(?:^|, )(\S+?)=Assignment\(partitions=\[([^\]]*)\](?:, userDataSize=\d+)?\)")

# (message start, kind, pattern); the first match wins.
_KINDS: tuple[tuple[str, str, str], ...] = (
    ("(Re-)joining group", "join_start", "any"),
    ("Request joining group due to: ", "join_request", "join_request"),
    ("Successfully joined group with generation ", "joined", "joined"),
    ("Successfully synced group in generation ", "synced", "synced"),
    ("Finished assignment for group at generation ", "leader_assignment", "leader_assignment"),
    ("Adding newly assigned partitions", "assigned", "partitions"),
    ("Setting newly assigned partitions", "assigned", "partitions"),
    ("Revoke previously assigned partitions", "revoked", "partitions"),
    ("Revoking previously assigned partitions", "revoked", "partitions"),
    ("Lost previously assigned partitions", "lost", "partitions"),
    ("consumer poll timeout has expired", "poll_timeout", "any"),
    ("Resetting generation ", "reset", "reset"),
)


@dataclass
class _Client:
    member_id: str | None = None
    generation: int | None = None
    reason: str | None = None  # a rejoin reason waiting for its "(Re-)joining group"
    group_kind: str = "classic"


def _partitions(text: str) -> list[dict[str, Any]]:
    return [parse_tp(item) for item in text.split(", ") if item.strip()]


# --- handlers: (match, client state, event) -> event or None (ignored) -------------------------------------------

Handler = Callable[[re.Match[str], _Client, Event], Event | None]


def _join_start(m: re.Match[str], client: _Client, ev: Event) -> Event:
    ev["event_type"] = "CLIENT_JOIN_START"
    if client.reason is not None:
        ev["client_reason"], client.reason = client.reason, None
    return ev


def _join_request(m: re.Match[str], client: _Client, ev: Event) -> None:
    client.reason = m[1]


def _joined(m: re.Match[str], client: _Client, ev: Event) -> Event:
    if m[1] is not None:
        client.generation, client.member_id = int(m[1]), m[2]
        ev.update(member_id=m[2], protocol=m[3])
    else:  # <= 2.6: the generation alone
        client.generation = int(m[4])
    ev.update(event_type="CLIENT_JOINED", generation=client.generation)
    return ev


def _synced(m: re.Match[str], client: _Client, ev: Event) -> Event:
    client.generation, client.member_id = int(m[1]), m[2]
    ev.update(event_type="CLIENT_SYNCED", generation=int(m[1]), member_id=m[2], protocol=m[3])
    return ev


def _leader_assignment(m: re.Match[str], client: _Client, ev: Event) -> Event:
    members = [{"member_id": a[1], "assignment": _partitions(a[2])} for a in _ASSIGNMENT.finditer(m[2])]
    if not members and m[2].strip():
        raise EventError("no member assignment in the map")
    ev.update(event_type="CLIENT_LEADER_ASSIGNMENT", generation=int(m[1]), leader_id=client.member_id,
              n_members=len(members), members=members)
    return ev


def _partition_event(event_type: str) -> Handler:
    def handler(m: re.Match[str], client: _Client, ev: Event) -> Event:
        ev.update(event_type=event_type, partitions=_partitions(m[1]), generation=client.generation)
        return ev
    return handler


def _poll_timeout(m: re.Match[str], client: _Client, ev: Event) -> Event:
    ev.update(event_type="CLIENT_POLL_TIMEOUT", reason_code="poll_timeout", generation=client.generation)
    return ev


def _reset(m: re.Match[str], client: _Client, ev: Event) -> None:
    client.generation = None
    if m[1]:
        client.member_id = None


def _leave(m: re.Match[str], client: _Client, ev: Event) -> Event:
    ev.update(event_type="MEMBER_LEFT", member_id=m[1], client_reason=m[3], reason_code="member_leave",
              generation=client.generation)
    return ev


def _k848_state(m: re.Match[str], client: _Client, ev: Event) -> Event:
    client.group_kind, client.member_id, client.generation = "consumer", m[1], int(m[2])
    ev.update(event_type="K848_MEMBER_STATE", member_id=m[1], generation=int(m[2]), raw=m[4], group_kind="consumer")
    return ev


_HANDLERS: dict[str, Handler] = {
    "join_start": _join_start, "join_request": _join_request, "joined": _joined, "synced": _synced,
    "leader_assignment": _leader_assignment, "assigned": _partition_event("CLIENT_PARTITIONS_ASSIGNED"),
    "revoked": _partition_event("CLIENT_PARTITIONS_REVOKED"), "lost": _partition_event("CLIENT_PARTITIONS_LOST"),
    "poll_timeout": _poll_timeout, "reset": _reset, "leave": _leave, "k848_state": _k848_state,
}


def classify(body: str) -> tuple[str, re.Pattern[str]] | None:
    for start, kind, pattern in _KINDS:
        if body.startswith(start):
            return kind, _PATTERNS[pattern]
    if body.startswith("Member "):
        if " sending LeaveGroup request " in body:
            return "leave", _PATTERNS["leave"]
        if " transitioned from " in body:
            return "k848_state", _PATTERNS["k848_state"]
    return None


def envelope_pattern(option: Any) -> re.Pattern[str]:
    """The envelope regex from ``ctx.options["envelope"]`` (a preset name or a regex); ValueError if unusable."""
    text = ENVELOPES.get(option or "log4j", option)
    if not isinstance(text, str):
        raise ValueError(f"client-log envelope must be a regex or one of {sorted(ENVELOPES)}, not {option!r}")
    try:
        pattern = re.compile(text, re.DOTALL)
    except re.error as exc:
        raise ValueError(f"client-log envelope {text!r} is not a valid regex: {exc}") from exc
    missing = {"ts", "level", "msg"} - set(pattern.groupindex)
    if missing:
        raise ValueError(f"client-log envelope {text!r} lacks the named group(s) {sorted(missing)}")
    return pattern


# --- the parser -----------------------------------------------------------------------------------------------------

class _Parser:
    def __init__(self, ctx: SourceContext) -> None:
        self.ctx = ctx
        self.report = ctx.report
        self.clock = LocalClock(ctx.tz)
        self.envelope = envelope_pattern(ctx.options.get("envelope"))
        self.clients: dict[tuple[str, str], _Client] = {}

    def run(self, lines: Iterable[str]) -> Iterator[Event]:
        record: list[str] = []
        start = 0
        for number, raw in enumerate(lines, 1):
            self.report.line()
            line = raw.rstrip("\r\n")
            # In Kafka's layout ("[%d] %p %m (%c)") a record is open until a line ends with its "(logger)" tail:
            # 4.x clients log a banner whose lines start with "*" ("The consumer rebalance protocol (KIP-848) is
            # production-ready!"), seen in a real 4.4.0 client's log (tests/replay_evidence)
            if is_continuation(line) or (record and line[:1] != "[" and not record[-1].endswith(")")
                                         and HEAD.match(record[0]) is not None):
                if record:
                    record.append(line)
                else:
                    self.report.ignore()
                continue
            if record:
                yield from self.record(start, record)
            record, start = [line], number
        if record:
            yield from self.record(start, record)

    def record(self, number: int, lines: list[str]) -> Iterator[Event]:
        """One log record (a head line and its continuation lines): each line counted once."""
        self.report.ignore(len(lines) - 1)
        match = self.envelope.match(lines[0])
        if match is None and len(lines) > 1:
            match = self.envelope.match("\n".join(lines))
        if match is None:
            reason = "truncated line" if "[Consumer " in lines[0] else "no envelope"
            self.report.unparsable(self.ctx.ref(number), reason, lines[0])
            return
        event = self.message(number, lines[0], match)
        if event is not None:
            self.report.event(FORMAT_NAME)
            yield event

    def message(self, number: int, head: str, envelope: re.Match[str]) -> Event | None:
        msg = envelope["msg"]
        prefix = _PREFIX.match(msg)
        if prefix is None:
            if msg.startswith("[Consumer "):  # the LogContext prefix itself is cut short
                return self.unparsable(number, "truncated line", head)
            self.report.ignore()  # another logger, or the application's own line
            return None
        found = classify(prefix[4])
        if found is None:
            self.report.ignore()
            return None
        kind, pattern = found
        body = pattern.match(prefix[4])
        if body is None:
            return self.unparsable(number, f"malformed {kind}", head)
        ts = self.clock.any(envelope["ts"].strip())
        if ts is None:
            return self.unparsable(number, "bad timestamp", head)
        instance, client_id, group = prefix[1], prefix[2], prefix[3]
        client = self.clients.setdefault((client_id, group), _Client())
        ev: Event = {
            "schema_version": SCHEMA_VERSION, "source": SOURCE, "source_ref": self.ctx.ref(number), "seq": number,
            "ts": ts, "ts_kind": "log_line", "cluster_id": self.ctx.cluster_id, "broker_id": self.ctx.broker_id,
            "group_id": group, "group_kind": client.group_kind, "client_id": client_id,
            "group_instance_id": instance, "member_id": client.member_id,
        }
        try:
            built = _HANDLERS[kind](body, client, ev)
        except ValueError:  # EventError: a partition that is not topic-partition
            return self.unparsable(number, f"malformed {kind}", head)
        if built is None:
            self.report.ignore()
        return built

    def unparsable(self, number: int, reason: str, head: str) -> Event | None:
        """Count the record as unparsable; None, for ``return self.unparsable(...)``."""
        self.report.unparsable(self.ctx.ref(number), reason, head)
        return None


def parse(lines: Iterable[str], ctx: SourceContext) -> Iterator[Event]:
    return _Parser(ctx).run(lines)


def sniff(lines: list[str]) -> bool:
    head = first_head(lines)
    if not head or starts_json(lines) or is_dump_line(head):
        return False
    broker, client = evidence(lines)
    return client > 0 and client >= broker


FORMAT = register(Format(
    name=FORMAT_NAME, source=SOURCE, parse=parse, sniff=sniff,
    description="Java consumer client log lines (ConsumerCoordinator; envelope configurable, log4j default)",
))
