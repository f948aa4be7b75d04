"""Broker ``server.log`` group-coordinator lines (spec/replay-inputs.md §2) to canonical events.

Both coordinators are read: the Scala one (``kafka.coordinator.group.GroupCoordinator``,
prefix ``[GroupCoordinator <id>]: ``, Kafka 1.1-3.9) and the Java one
(``org.apache.kafka.coordinator.group.GroupMetadataManager``, prefix ``[GroupCoordinator
id=<id> topic=__consumer_offsets partition=<p>] ``, opt-in 3.7, default 4.x), with the older
texts §2.2 lists. Each line goes through: the log4j envelope ``[%d] %p %m (%c)`` (its head by
one regex, the time only sliced until a line yields an event; the tail sliced), the logger
filter, the prefix (broker id and, for Java, the offsets partition; parsed once per distinct
prefix), a literal classification on the body's first word plus one ``in`` test,
and then exactly ONE regex for that kind (§6.3/§6.4: no chain of regexes).
Timestamps are broker-local without a zone and are converted with ``ctx.tz`` (:class:`LocalClock`).

Mapping (``generation`` is the generation produced/observed; every event has ``ts_kind`` ``log_line``):

======================  ==============================  ================================================
line (§2.2 / §2.4)       event_type                      columns
======================  ==============================  ================================================
B1 prepare (all forms)   REBALANCE_PREPARE               prev_generation = old, generation = old + 1,
                                                         reason_raw, reason_code (§2.3 table, ``other``
                                                         when unknown), client_reason, member_id /
                                                         group_instance_id when the reason names them
B2 stabilized            JOIN_COMPLETE                   generation, prev_generation, n_members (2.8+)
B3 leader sync           SYNC_LEADER_ASSIGNMENT          leader_id (3.0+), generation, n_members, n_static
B4 now empty             GROUP_EMPTY                     generation, n_members = 0
B5 heartbeat expiry      MEMBER_SESSION_EXPIRED          member_id, reason_code ``session_timeout``
B6 pending expiry        PENDING_MEMBER_EXPIRED          member_id, reason_code ``timeout``
B7 new id, rejoin        MEMBER_JOIN_REQUEST             member_id, reason_code ``member_id_required``
B7b / pending rejoin     MEMBER_JOINED                   member_id (``Pending dynamic member with id …
                                                         Adding to the group now.`` is KIP-394 step 2)
B8 static, new id        MEMBER_JOINED                   member_id, group_instance_id
B8 static, replacing     STATIC_MEMBER_REPLACED          group_instance_id, raw ``replaced <old>`` (the
                                                         line does not name the new member id)
static, no rebalance     STATIC_MEMBER_REJOINED          group_instance_id; the line names no group: it
                                                         is attributed to the previous B8 replace line of
                                                         the same broker (unparsable if there is none)
B9 leave (Scala)         MEMBER_LEFT                     member_id, group_instance_id, client_id,
                                                         client_host, session_timeout_ms,
                                                         rebalance_timeout_ms, supported_protocols,
                                                         client_reason, reason_code ``member_leave``
B9J leave (Java)         MEMBER_LEFT                     member_id, group_instance_id, client_reason;
                                                         group_kind ``consumer`` for the Dynamic/Static
                                                         Member forms of converted groups
B10 pending leave        PENDING_MEMBER_EXPIRED          member_id, reason_code ``leave``, client_reason
B11 dropped at deadline  MEMBERS_DROPPED_NOT_REJOINED    raw = ids joined by ``,``, n_members = count
B13 load/unload          GROUP_LOADED / GROUP_UNLOADED   generation (Scala, Java unload), n_members and
                                                         group_kind (Java ``Loaded … group``)
B14 dead                 GROUP_DEAD                      generation
K848 epoch bump          K848_EPOCH_BUMP                 generation = group epoch (4.1+ adds ``with metadata
                                                         hash H``)
K848 target computed     K848_TARGET_COMPUTED            generation = epoch, protocol = server assignor
K848 member state        K848_MEMBER_STATE               member_id, generation = epoch, prev_generation,
                                                         raw = state (STABLE, …), partitions,
                                                         partitions_pending_revocation (topics are topic
                                                         IDS here: the line prints ``<uuid>-<p>``, 4.1+
                                                         ``<uuid>-<p>@<epoch>``); the
                                                         3.7 ``transitioned from … to …`` form gives the
                                                         epochs and state only
K848 fenced              K848_MEMBER_FENCED              member_id, reason_raw, reason_code
                                                         (``session_timeout``/``rebalance_timeout``/
                                                         ``sync_timeout``/``other``)
K848 left                K848_MEMBER_LEFT                member_id, group_instance_id, reason_code
                                                         ``member_leave`` or ``static_temporary_leave``
K848 join / static join  MEMBER_JOINED (consumer)        member_id, group_instance_id
K848 subscribed topics   MEMBER_JOINED (consumer)        member_id, subscription.topics (an upsert of the
                                                         member, as the dump's member-metadata record)
K848 static re-join      STATIC_MEMBER_REPLACED          member_id (new), group_instance_id, raw
                                                         ``replaced <old>``; the 3.7 form (no new id) is
                                                         STATIC_MEMBER_REJOINED
======================  ==============================  ================================================

K848 events have group_kind ``consumer``; every other line ``classic``. ``coord_partition``
comes from the Java prefix or the Scala ``(__consumer_offsets-N)`` of B1/B2/B4; other Scala lines
reuse the partition learned for the group earlier in the file, or compute it when
``ctx.options["offsets_partitions"]`` gives ``offsets.topic.num.partitions`` (§2.1).

Ignored (counted with ``report.ignore``): other loggers; coordinator lines that are not group
rebalance facts (B12 ``could not complete rebalance`` and the ``Group leader … failed to join``
line: a join phase extended, no generation starts, so no canonical type fits; B13 Elected/Resigned
and ``Finished loading``: they name no group; B15 static fencing: a rejected request, the group does
not change; ``Loaded member``; K848 subscription-metadata, metadata-hash, regex and migration lines); blank lines and
continuation lines (stack traces, multi-line messages such as the KafkaConfig dump, which are
closed by a `` (logger)`` line).

Unparsable (``report.unparsable``): a line with no envelope; an envelope head whose ``(logger)``
tail is missing and not closed by continuation lines (a truncated line, e.g. the last one); a bad
timestamp; a known template prefix whose full pattern fails (reason ``malformed <kind>``).

Limits: no INFO line marks the move to Stable (§2.7), and B3's leader id exists from 3.0 only.
B7 is DEBUG before 3.0 and only seen if DEBUG was on. A DST fall-back hour is resolved by line
order (:class:`LocalClock`).

The adapter is four modules: this one (the parser's per-line loop and the sniffer),
:mod:`._broker_lines` (loggers, prefixes, message kinds and their regexes, reasons),
:mod:`._broker_builders` (one event builder per kind) and :mod:`._log4j` (the clock and the
envelope, shared with the client-log adapter).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from rebalance_lab.clients.assignors.java_hashmap import string_hash
from rebalance_lab.replay.event_rows import SCHEMA_VERSION
from rebalance_lab.replay.sources import Format, SourceContext, register
from rebalance_lab.replay.sources._broker_builders import DISPATCH
from rebalance_lab.replay.sources._broker_lines import (  # noqa: F401 - classify, reason_fields: the tests' entry
    COORDINATOR_LOGGERS,
    PREFIX,
    Event,
    classify,
    reason_fields,
)
from rebalance_lab.replay.sources._log4j import (
    ENVELOPE,
    LOGGER_NAME,
    MILLIS_US,
    LocalClock,
    evidence,
    first_head,
    is_continuation,
    starts_json,
)

FORMAT_NAME = "broker-log"
SOURCE = "broker_log"


# --- the parser -----------------------------------------------------------------------------------------------------

class _Parser:
    """Per-input state: the clock cache, prefixes seen, partitions learned, a pending multi-line head.

    The per-line work is fused into :meth:`run` (envelope and logger filter, which every line pays) and
    :meth:`event` (a coordinator line: prefix, kind, pattern, timestamp, event, builder): at ~1.4 M lines
    per benchmark, each Python call or attribute load saved per line is worth ~0.1 CPU-s.
    """

    def __init__(self, ctx: SourceContext) -> None:
        self.ctx = ctx
        self.name = ctx.name
        self.report = ctx.report
        self.clock = LocalClock(ctx.tz)
        self.second = ""  # the last log4j second (``yyyy-MM-dd HH:mm:ss``) converted, and its epoch µs
        self.second_us = 0
        #: prefix -> (where the body starts after it, the event columns every line with this prefix shares)
        self.prefixes: dict[str, tuple[int, Event]] = {}
        self.unprefixed = self.columns(ctx.broker_id, None)  # for lines without a coordinator prefix
        self.partitions: dict[str, int] = {}
        self.num_partitions: int | None = ctx.options.get("offsets_partitions")
        self.static_replace: dict[int | None, Event] = {}  # broker -> its latest B8 "Replacing" event
        self.pending: tuple[int, str] | None = None  # an envelope head still waiting for its "(logger)" tail
        self.loggers: dict[str, bool] = {}  # tails seen that look like logger names -> a coordinator's? (bounded)

    def columns(self, broker: int | None, partition: int | None) -> Event:
        """The first columns of an event, in their order; :meth:`event` copies this and sets the per-line ones."""
        return {
            "schema_version": SCHEMA_VERSION, "source": SOURCE, "source_ref": "", "seq": 0, "ts": 0,
            "ts_kind": "log_line", "cluster_id": self.ctx.cluster_id, "broker_id": broker,
            "coord_partition": partition, "group_kind": "classic",
        }

    def run(self, lines: Iterable[str]) -> Iterator[Event]:
        # Lines, events and ignored lines are counted locally and added once (also when the consumer stops early).
        number = produced = ignored = 0
        loggers = self.loggers
        envelope = ENVELOPE.match
        event = self.event
        try:
            for number, raw in enumerate(lines, 1):
                line = raw.rstrip("\r\n")
                if line[:1] == "[":
                    if self.pending is not None:
                        self.flush()
                    head = envelope(line)
                    if head is None:
                        self.report.unparsable(self.ctx.ref(number), "no envelope", line)
                        continue
                    start = head.end()  # the message starts after "[timestamp] LEVEL "
                    tail = line.rfind(" (")
                    logger = line[tail + 2:-1] if tail >= start and line[-1] == ")" else ""
                    coordinator = loggers.get(logger)
                    if coordinator is None:
                        coordinator = self.new_logger(number, line, logger)
                    if coordinator:
                        found = event(number, line, start, tail)
                        if found is not None:
                            produced += 1
                            yield found
                    elif coordinator is not None:
                        ignored += 1
                elif is_continuation(line):
                    self.continuation(line)
                else:
                    self.flush()
                    self.report.unparsable(self.ctx.ref(number), "no envelope", line)
            self.flush()
        finally:
            self.report.line(number)
            self.report.ignore(ignored)
            self.report.event(FORMAT_NAME, produced)

    def new_logger(self, number: int, line: str, logger: str) -> bool | None:
        """Whether a logger not seen before is a coordinator's; None (and the line pending) if the line has no
        ``(logger)`` tail: it was cut short, or it is the head of a multi-line message."""
        if LOGGER_NAME.fullmatch(logger) is None:
            self.pending = (number, line)
            return None
        coordinator = self.loggers[logger] = logger in COORDINATOR_LOGGERS
        return coordinator

    def flush(self) -> None:
        """A head that no continuation line closed was cut short."""
        if self.pending is not None:
            number, line = self.pending
            self.pending = None
            self.report.unparsable(self.ctx.ref(number), "truncated line", line)

    def continuation(self, line: str) -> None:
        self.report.ignore()
        if self.pending is not None and line.endswith(")") and line.lstrip().startswith("("):
            self.pending = None  # a multi-line message (e.g. the KafkaConfig dump) closed by its logger
            self.report.ignore()

    def event(self, number: int, line: str, start: int, tail: int) -> Event | None:
        """The event of a coordinator line whose message is ``line[start:tail]``; None if it is ignored or
        unparsable (counted here)."""
        # The coordinator's logIdent (§2.1): a prefix seen before, else parsed once by new_prefix.
        close = line.find("]", start, tail)
        known = self.prefixes.get(line[start:close]) if close > start else None
        if known is None:
            known = self.new_prefix(line[start:tail], close - start if close >= 0 else -1)
        skip, columns = known
        body = line[start + skip:tail]
        # classify(), inline: the first word picks the rules, one "in" test per rule picks the kind.
        space = body.find(" ")
        rules = DISPATCH.get(body[:space] if space > 0 else body)
        if rules is None and body.startswith("[GroupId="):
            rules = DISPATCH["[GroupId="]
        for rule in rules or ():
            if rule[0] in body:
                break
        else:
            self.report.ignore()
            return None
        _, kind, pattern, builder = rule
        match = pattern.match(body)
        if match is None:
            self.report.unparsable(self.ctx.ref(number), f"malformed {kind}", line)
            return None
        # LocalClock.log4j, inline: the envelope matched, so line[1:24] has the length of a log4j time.
        millis_us = MILLIS_US.get(line[21:24]) if line[20] == "," else None
        second = line[1:20]
        if millis_us is not None and second != self.second:
            seconds = self.clock.wall(second)
            if seconds is None:
                millis_us = None
            else:
                self.second, self.second_us = second, seconds * 1_000_000
        if millis_us is None:
            self.report.unparsable(self.ctx.ref(number), "bad timestamp", line)
            return None
        ev = columns.copy()
        ev["source_ref"] = f"{self.name}:{number}"
        ev["seq"] = number
        ev["ts"] = self.second_us + millis_us
        try:
            built = builder(match, ev) if builder is not None else self.static_rejoin(ev)
        except ValueError:  # EventError, or int() of a number of more than 4,300 digits (a damaged line)
            built = None
        if built is None:
            self.report.unparsable(self.ctx.ref(number), f"malformed {kind}", line)
            return None
        return self.finish(kind, built)

    def new_prefix(self, msg: str, close: int) -> tuple[int, Event]:
        """Parse and remember a prefix: (where the body starts, the columns it gives); (0, ctx's broker) if the
        message has no coordinator prefix."""
        if close < 0 or not msg.startswith(("[GroupCoordinator ", "[GroupMetadataManager ")):
            return 0, self.unprefixed
        m = PREFIX.match(msg, 0, close)
        if m is None:
            return 0, self.unprefixed
        known = (close + (3 if msg.startswith("]: ", close) else 2),
                 self.columns(int(m[1] or m[3]), int(m[2]) if m[2] else None))
        self.prefixes[msg[:close]] = known
        return known

    def static_rejoin(self, ev: Event) -> Event | None:
        """The "will not trigger rebalance" line names nothing: it follows its B8 replace line."""
        previous = self.static_replace.pop(ev["broker_id"], None)
        if previous is None:
            return None
        ev["group_id"] = previous["group_id"]
        ev["event_type"] = "STATIC_MEMBER_REJOINED"
        ev["group_instance_id"] = previous.get("group_instance_id")
        ev["coord_partition"] = previous["coord_partition"]
        return ev

    def finish(self, kind: str, ev: Event) -> Event:
        # The ids a group's events repeat are interned here and in the builders (FORMAT.interns).
        group = ev["group_id"] = sys.intern(ev["group_id"])
        member = ev.get("member_id")
        if member is not None:
            ev["member_id"] = sys.intern(member)
        partition = ev["coord_partition"]
        if partition is None:
            partition = self.partitions.get(group)
            if partition is None and self.num_partitions:
                partition = partition_for(group, self.num_partitions)
            ev["coord_partition"] = partition
        elif group not in self.partitions:
            self.partitions[group] = partition
        if kind == "static_join" and ev["event_type"] == "STATIC_MEMBER_REPLACED":
            self.static_replace[ev["broker_id"]] = ev
        return ev


def partition_for(group_id: str, num_partitions: int) -> int:
    """``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`` (§2.1)."""
    h = string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def parse(lines: Iterable[str], ctx: SourceContext) -> Iterator[Event]:
    return _Parser(ctx).run(lines)


# --- sniffing -------------------------------------------------------------------------------------------------------

def sniff(lines: list[str]) -> bool:
    if starts_json(lines) or not first_head(lines).startswith("["):
        return False
    broker, client = evidence(lines)
    return broker > client


FORMAT = register(Format(
    name=FORMAT_NAME, source=SOURCE, parse=parse, sniff=sniff,
    description="broker server.log group-coordinator lines (Scala 1.1-3.9 and Java 3.7+/4.x coordinators)",
    interns=True,  # group and member ids in _Parser.finish, the other shared columns in the builders
))
