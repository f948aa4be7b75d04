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
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from rebalance_lab.clients.assignors.java_hashmap import string_hash
from rebalance_lab.replay.events import SCHEMA_VERSION, EventError, parse_tp
from rebalance_lab.replay.sources import Format, SourceContext, register

FORMAT_NAME = "broker-log"
SOURCE = "broker_log"

Event = dict[str, Any]

# --- time -----------------------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_WALL = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", re.ASCII)
#: ``SSS`` (exactly three ASCII digits) -> microseconds: one lookup instead of a check and a conversion per line
_MILLIS_US = {f"{ms:03d}": ms * 1000 for ms in range(1000)}
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
        millis_us = _MILLIS_US.get(text[20:])
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


# --- envelope, loggers, prefixes (§2.1) ------------------------------------------------------------------------------

_LOGGERS = frozenset({
    "kafka.coordinator.group.GroupCoordinator",
    "kafka.coordinator.group.GroupMetadataManager",
    "kafka.coordinator.group.GroupMetadata$",
    "org.apache.kafka.coordinator.group.GroupMetadataManager",
    "org.apache.kafka.coordinator.group.GroupCoordinatorShard",
})
_PREFIX = re.compile(r"\[(?:GroupCoordinator (?:id=)?(\d+)(?: topic=\S+ partition=(\d+))?|"
                     r"GroupMetadataManager brokerId=(\d+))$")
_LOGGER = re.compile(r"[A-Za-z_$][\w$]*(?:\.[\w$]+)*", re.ASCII)
_EXCEPTION = re.compile(r"(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable)\b")
#: ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL ``: the time is only sliced here (checked when a line yields an event)
_ENVELOPE = re.compile(r"\[.{23}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ", re.DOTALL)
_HEAD = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")


def is_continuation(line: str) -> bool:
    """A line that continues the previous log record: indented, blank, or a Java exception header."""
    return not line or line[0] in " \t" or line.startswith("Caused by: ") or _EXCEPTION.match(line) is not None


# --- message kinds: first word -> [(needle, kind)], then one regex per kind ---------------------------------------

_IGNORE = ""  # a recognised line that yields no event

_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "Preparing": (("Preparing to rebalance group ", "prepare"),),
    "Stabilized": (("Stabilized group ", "stabilized"),),
    "Assignment": (("Assignment received from leader ", "sync"),),
    "Group": (
        (" is now empty", "empty"),
        (" removed dynamic members who haven't joined: ", "dropped"),
        (" transitioned to Dead in generation ", "dead"),
    ),
    "Member": (
        (" has failed, removing it from the group", "expired"),
        ("Member MemberMetadata(", "leave_scala"),
    ),
    "Pending": (
        (" has been removed after session timeout expiration", "pending_expired"),
        ("Pending member with memberId=", "pending_leave_scala"),
        ("Pending dynamic member with id ", "pending_join"),
    ),
    "Dynamic": ((" with unknown member id ", "dynamic_join"),),
    "Static": (
        ("Static member with groupInstanceId=", "static_join"),
        ("Static member which joins during Stable stage", "static_rejoin"),
    ),
    "[Group": ((" has left group through explicit `LeaveGroup`", "leave_java"),),
    "[GroupId": (
        (" Bumped group epoch to ", "k848_epoch"),
        (" Computed a new target assignment for epoch ", "k848_target"),
        (" new assignment state: ", "k848_state"),
        (" transitioned from ", "k848_transition"),
        (" re-joins the consumer group", "k848_rejoin"),
        (" joins the consumer group", "k848_join"),
        (" updated its subscribed topics to: ", "k848_topics"),
        (" left the consumer group", "k848_left"),
        (" fenced from the group because ", "k848_fenced"),
    ),
    "[GroupId=": (
        (" Unloading group metadata for generation ", "unload_java"),
        (" Unloaded group metadata for group epoch ", "unload_java"),
    ),
    "Loading": (("Loading group metadata for ", "load_scala"),),
    "Unloading": (("Unloading group metadata for ", "unload_scala"),),
    "Loaded": (("Loaded classic group ", "loaded_java"), ("Loaded consumer group ", "loaded_java")),
}

_GROUP_MEMBER = r"(.+?)"  # group ids may contain spaces: lazy before a literal (§2.1)
_PATTERNS: dict[str, re.Pattern[str]] = {name: re.compile(pattern) for name, pattern in {
    # The space after the group is outside the optional "in state": the lazy group then meets a literal at each
    # step instead of entering an optional group (the same matches, a third less time on this, the commonest line).
    "prepare": r"Preparing to rebalance group (.+?) (?:in state \w+ )?with old generation (-?\d+)"
               r"(?: \(__consumer_offsets-(\d+)\))?(?: \(reason: (.*)\))?\.?$",
    "stabilized": r"Stabilized group (.+?) generation (\d+)(?: \(__consumer_offsets-(\d+)\))?"
                  r"(?: with (\d+) members)?\.?$",
    "sync": r"Assignment received from leader (?:(\S+) )?for group (.+?) for generation (\d+)"
            r"(?:\. The group has (\d+) members, (\d+) of which are static\.)?$",
    "empty": r"Group (.+?) with generation (\d+) is now empty(?: \(__consumer_offsets-(\d+)\)|\.)$",
    "dropped": r"Group (.+?) removed dynamic members who haven't joined: (.*)$",
    "dead": r"Group (.+?) transitioned to Dead in generation (-?\d+)\.?$",
    "expired": r"Member (\S+) in group (.+?) has failed, removing it from the group\.?$",
    "leave_scala": r"Member MemberMetadata\(memberId=(.*?), groupInstanceId=(.*?), clientId=(.*?), clientHost=(.*?), "
                   r"sessionTimeoutMs=(\d+), rebalanceTimeoutMs=(\d+), supportedProtocols=List\((.*?)\)\) "
                   r"has left group (.+?) through explicit `LeaveGroup`(?:; client reason: (.*)| request)$",
    "pending_expired": r"Pending member (\S+) in group (.+?) has been removed after session timeout expiration\.$",
    "pending_leave_scala": r"Pending member with memberId=(\S+) has left group (.+?) through explicit `LeaveGroup` "
                           r"request(?:; client reason: (.*))?$",
    "pending_join": r"Pending dynamic member with id (\S+) joins group (.+?) in (\w+) state\. "
                    r"Adding to the group now\.$",
    "dynamic_join": r"Dynamic [Mm]ember with unknown member id (?:re)?joins group (.+?) in (?:state )?(\w+)"
                    r"(?: state)?\. Created a new member id (\S+) "
                    r"(and request(?:ing)? the member to rejoin|for this member and add|and added the member)",
    "static_join": r"Static member with groupInstanceId=(.+?) and unknown member id joins group (.+?) in (\w+) state\. "
                   r"(?:Replacing previously mapped member (\S+) with this groupInstanceId\.|"
                   r"Created a new member id (\S+) for this member and add(?:ed)? to the group\.)$",
    "static_rejoin": r"Static member which joins during Stable stage and doesn't affect "
                     r"(?:selectProtocol|the selected protocol) will not trigger (?:a )?rebalance\.$",
    "leave_java": r"\[Group (.+?)\] (?:(Dynamic|Static|Pending) )?[Mm]ember (\S+) (?:with instance id (\S+) )?"
                  r"has left group through explicit `LeaveGroup` request; client reason: (.*)$",
    "k848_epoch": r"\[GroupId (.+?)\] Bumped group epoch to (\d+)(?: with metadata hash -?\d+)?\.$",
    "k848_target": r"\[GroupId (.+?)\] Computed a new target assignment for epoch (\d+)(?: with '(\S+)' assignor)?"
                   r"(?: in (\d+)ms)?(?:: (.*))?\.$",
    "k848_state": r"\[GroupId (.+?)\] Member (\S+) new assignment state: epoch=(-?\d+), previousEpoch=(-?\d+), "
                  r"state=(\w+), assignedPartitions=\[(.*?)\](?: and revokedPartitions=\[(.*)\])?\.$",
    "k848_transition": r"\[GroupId (.+?)\] Member (\S+) transitioned from .* to CurrentAssignment\(,? ?"
                       r"memberEpoch=(-?\d+), previousMemberEpoch=(-?\d+), .*?state=(\w+)",
    "k848_join": r"\[GroupId (.+?)\] (?:Static )?[Mm]ember (\S+) (?:with instance id (\S+) )?joins the consumer group"
                 r"(?: using the (?:classic|consumer) protocol)?\.$",
    "k848_topics": r"\[GroupId (.+?)\] Member (\S+) updated its subscribed topics to: \[(.*)\]\.$",
    "k848_rejoin": r"\[GroupId (.+?)\] Static member (?:(\S+) )?with instance id (\S+) re-joins the consumer group"
                   r"(?: using the \w+ protocol\. Created a new member (\S+) to replace the existing member (\S+))?\.$",
    "k848_left": r"\[GroupId (.+?)\] (?:Static )?[Mm]ember (\S+) (?:with instance id (\S+) )?(temporarily )?"
                 r"left the consumer group\.$",
    "k848_fenced": r"\[GroupId (.+?)\] Member (\S+) fenced from the group because (.*?)\.*$",
    "unload_java": r"\[GroupId=(.+?)\] Unload(?:ing|ed) group metadata for (?:generation|group (epoch)) (-?\d+)\.$",
    "load_scala": r"Loading group metadata for (.+?) with generation (-?\d+)$",
    "unload_scala": r"Unloading group metadata for (.+?) with generation (-?\d+)$",
    "loaded_java": r"Loaded (classic|consumer) group (.+?) with (\d+) members\.$",
}.items()}


def classify(body: str) -> str | None:
    """The message kind from literals only; None for a line that is not about group rebalances."""
    space = body.find(" ")
    word = body[:space] if space > 0 else body
    if word.startswith("[GroupId="):
        word = "[GroupId="
    rules = _RULES.get(word)
    if rules is None:
        return None
    for needle, kind in rules:
        if needle in body:
            return kind
    return None


# --- reasons (§2.3) -------------------------------------------------------------------------------------------------

# First word -> (prefix, code, where the member id is: 1 = the word after the prefix, 0 = the only id of
# the "(...)" list after it, -1 = not named). Within a word, longer prefixes first.
_REASONS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "Adding": (("Adding new member ", "member_join", 1),),
    "Updating": (("Updating metadata for static member ", "static_rejoin_metadata", 1),
                 ("Updating metadata for member ", "member_metadata_change", 1)),
    "Member": (("Member ", "member_rejoin", 1),),
    "Leader": (("Leader ", "leader_rejoin", 1),),
    "leader": (("leader ", "leader_rejoin", 1),),
    "removing": (("removing member ", "", 1),),  # heartbeat expiration or LeaveGroup: decided on the suffix
    "Removing": (("Removing member ", "member_leave", 1), ("Removing ", "sync_timeout", -1)),
    "Group's": (("Group's selectedProtocol will change because static member ", "protocol_change", 1),),
    "Freshly-loaded": (("Freshly-loaded group", "over_capacity", -1),),
    "Error": (("Error ", "store_error", -1),),
    "error": (("error ", "store_error", -1),),
    "Downgrade": (("Downgrade group ", "protocol_downgrade", -1),),
    "explicit": (("explicit `LeaveGroup` request for (", "member_leave", 0),),
}
_INSTANCE = " with instance id "
_INSTANCE_JOIN = " with group instance id "
_CLIENT_REASON = "; client reason: "


def reason_fields(reason: str, ev: Event) -> None:
    """reason_raw, reason_code, client_reason and the member / instance the reason names."""
    ev["reason_raw"] = reason
    main, sep, client = reason.partition(_CLIENT_REASON)
    if sep:
        ev["client_reason"] = client
    for prefix, code, member_at in _REASONS.get(main.split(" ", 1)[0], ()):
        if main.startswith(prefix):
            rest = main[len(prefix):]
            if not code:
                code = "session_timeout" if "on heartbeat expiration" in rest else "member_leave"
            ev["reason_code"] = code
            if member_at == 1:
                ev["member_id"] = rest.split(" ", 1)[0]
            elif member_at == 0:
                ids = rest.split(")", 1)[0].split(", ")
                if len(ids) == 1:
                    ev["member_id"] = ids[0]
            _instance(main, ev)
            return
    ev["reason_code"] = "other"


def _instance(main: str, ev: Event) -> None:
    at = main.find(_INSTANCE_JOIN)
    if at >= 0:
        instance = option_value(main[at + len(_INSTANCE_JOIN):].split(" ", 1)[0])
        if instance is not None:
            ev["group_instance_id"] = sys.intern(instance)
        return
    at = main.find(_INSTANCE)
    if at >= 0:
        ev["group_instance_id"] = sys.intern(main[at + len(_INSTANCE):].split(" ", 1)[0])


def option_value(text: str) -> str | None:
    """Scala ``Some(x)``/``None`` or Java ``x``/``null`` to x or None."""
    if text in ("None", "null", ""):
        return None
    if text.startswith("Some(") and text.endswith(")"):
        return text[5:-1]
    return text


def id_set(text: str) -> list[str]:
    """Scala ``Set(a, b)`` (or ``HashSet(…)``) and Java ``[a, b]`` to ids."""
    text = text.strip()
    if text.endswith(")") and "(" in text:
        text = text[text.index("(") + 1:-1]
    elif text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [item for item in text.split(", ") if item]


def tp_list(text: str) -> list[dict[str, Any]]:
    """``t-0, t-1`` (TopicPartition strings, split on the last ``-``)."""
    return [parse_tp(item) for item in text.split(", ") if item.strip()]


def epoch_tp_list(text: str) -> list[dict[str, Any]]:
    """A KIP-848 member state's partitions: ``<topic id>-<p>``, in Kafka 4.1+ ``<topic id>-<p>@<epoch>`` (the
    epoch the partition was assigned in; a topic name or id never contains ``@``)."""
    return [parse_tp(item.partition("@")[0]) for item in text.split(", ") if item.strip()]


# --- builders: (match, event) -> event, or None to ignore -------------------------------------------------------

Builder = Callable[[re.Match[str], Event], Event | None]


def _prepare(m: re.Match[str], ev: Event) -> Event:
    old = int(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "REBALANCE_PREPARE"
    ev["prev_generation"] = old
    ev["generation"] = old + 1
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    if m[4] is not None:
        reason_fields(m[4], ev)
    return ev


def _stabilized(m: re.Match[str], ev: Event) -> Event:
    generation = int(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "JOIN_COMPLETE"
    ev["generation"] = generation
    ev["prev_generation"] = generation - 1
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    if m[4] is not None:
        ev["n_members"] = int(m[4])
    return ev


def _sync(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "SYNC_LEADER_ASSIGNMENT"
    ev["generation"] = int(m[3])
    if m[1] is not None:
        ev["leader_id"] = sys.intern(m[1])
    if m[4] is not None:
        ev["n_members"] = int(m[4])
        ev["n_static"] = int(m[5])
    return ev


def _empty(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_EMPTY"
    ev["generation"] = int(m[2])
    ev["n_members"] = 0
    if m[3] is not None:
        ev["coord_partition"] = int(m[3])
    return ev


def _dropped(m: re.Match[str], ev: Event) -> Event:
    ids = id_set(m[2])
    ev["group_id"] = m[1]
    ev["event_type"] = "MEMBERS_DROPPED_NOT_REJOINED"
    ev["raw"] = ",".join(ids)
    ev["n_members"] = len(ids)
    return ev


def _dead(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_DEAD"
    ev["generation"] = int(m[2])
    return ev


def _expired(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "MEMBER_SESSION_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "session_timeout"
    return ev


def _leave_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[8]
    ev["event_type"] = "MEMBER_LEFT"
    ev["member_id"] = m[1]
    instance = option_value(m[2])
    ev["group_instance_id"] = None if instance is None else sys.intern(instance)
    ev["client_id"] = sys.intern(m[3])
    ev["client_host"] = sys.intern(m[4])
    ev["session_timeout_ms"] = int(m[5])
    ev["rebalance_timeout_ms"] = int(m[6])
    ev["supported_protocols"] = [p for p in m[7].split(", ") if p]
    ev["reason_code"] = "member_leave"
    if m[9] is not None:
        ev["client_reason"] = m[9]
    return ev


def _pending_expired(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "PENDING_MEMBER_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "timeout"
    return ev


def _pending_leave_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "PENDING_MEMBER_EXPIRED"
    ev["member_id"] = m[1]
    ev["reason_code"] = "leave"
    if m[3] is not None:
        ev["client_reason"] = m[3]
    return ev


def _pending_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[1]
    return ev


def _dynamic_join(m: re.Match[str], ev: Event) -> Event:
    if m[4].startswith("and request"):  # KIP-394 step 1: the member must rejoin with this id
        ev["group_id"] = m[1]
        ev["event_type"] = "MEMBER_JOIN_REQUEST"
        ev["member_id"] = m[3]
        ev["reason_code"] = "member_id_required"
    else:
        ev["group_id"] = m[1]
        ev["event_type"] = "MEMBER_JOINED"
        ev["member_id"] = m[3]
    return ev


def _static_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["group_instance_id"] = sys.intern(m[1])
    if m[4] is not None:
        ev["event_type"] = "STATIC_MEMBER_REPLACED"
        ev["raw"] = f"replaced {m[4]}"
    else:
        ev["event_type"] = "MEMBER_JOINED"
        ev["member_id"] = m[5]
    return ev


def _leave_java(m: re.Match[str], ev: Event) -> Event:
    kind = m[2]
    ev["group_id"] = m[1]
    ev["member_id"] = m[3]
    ev["client_reason"] = m[5]
    if kind == "Pending":
        ev["event_type"] = "PENDING_MEMBER_EXPIRED"
        ev["reason_code"] = "leave"
        return ev
    ev["event_type"] = "MEMBER_LEFT"
    ev["reason_code"] = "member_leave"
    if m[4] is not None:
        ev["group_instance_id"] = sys.intern(m[4])
    if kind is not None:  # "Dynamic"/"Static Member": a classic member of a consumer group
        ev["group_kind"] = "consumer"
    return ev


def _k848_epoch(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_EPOCH_BUMP"
    ev["generation"] = int(m[2])
    return ev


def _k848_target(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_TARGET_COMPUTED"
    ev["generation"] = int(m[2])
    if m[3] is not None:
        ev["protocol"] = sys.intern(m[3])
    return ev


def _k848_state(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_STATE"
    ev["member_id"] = m[2]
    ev["generation"] = int(m[3])
    ev["prev_generation"] = int(m[4])
    ev["raw"] = m[5]
    ev["partitions"] = epoch_tp_list(m[6])
    if m[7] is not None:
        ev["partitions_pending_revocation"] = epoch_tp_list(m[7])
    return ev


def _k848_transition(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_STATE"
    ev["member_id"] = m[2]
    ev["generation"] = int(m[3])
    ev["prev_generation"] = int(m[4])
    ev["raw"] = m[5]
    return ev


def _k848_join(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[2]
    if m[3] is not None:
        ev["group_instance_id"] = sys.intern(m[3])
    return ev


def _k848_topics(m: re.Match[str], ev: Event) -> Event:
    """A member's new subscription (INFO in 3.7, DEBUG since): an upsert of the member, as the dump's member record."""
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "MEMBER_JOINED"
    ev["member_id"] = m[2]
    topics = [sys.intern(t) for t in m[3].split(", ") if t]
    ev["subscription"] = {"topics": topics, "owned": None, "generation": None, "rack": None}
    return ev


def _k848_rejoin(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["group_instance_id"] = sys.intern(m[3])
    if m[4] is not None:
        ev["event_type"] = "STATIC_MEMBER_REPLACED"
        ev["member_id"] = m[4]
        ev["raw"] = f"replaced {m[5]}"
    else:
        ev["event_type"] = "STATIC_MEMBER_REJOINED"
        ev["member_id"] = m[2]
    return ev


def _k848_left(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_LEFT"
    ev["member_id"] = m[2]
    ev["reason_code"] = "static_temporary_leave" if m[4] else "member_leave"
    if m[3] is not None:
        ev["group_instance_id"] = sys.intern(m[3])
    return ev


_FENCE_CODES = (("session expired", "session_timeout"), ("within the rebalance timeout", "rebalance_timeout"),
                ("failed to transition from epoch", "rebalance_timeout"), ("failed to revoke", "rebalance_timeout"),
                ("failed to sync", "sync_timeout"))


def _k848_fenced(m: re.Match[str], ev: Event) -> Event:
    reason = m[3]
    code = next((code for needle, code in _FENCE_CODES if needle in reason), "other")
    ev["group_id"] = m[1]
    ev["group_kind"] = "consumer"
    ev["event_type"] = "K848_MEMBER_FENCED"
    ev["member_id"] = m[2]
    ev["reason_raw"] = reason
    ev["reason_code"] = code
    return ev


def _unload_java(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_UNLOADED"
    ev["generation"] = int(m[3])
    if m[2] is not None:  # "group epoch": a consumer group
        ev["group_kind"] = "consumer"
    return ev


def _load_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_LOADED"
    ev["generation"] = int(m[2])
    return ev


def _unload_scala(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[1]
    ev["event_type"] = "GROUP_UNLOADED"
    ev["generation"] = int(m[2])
    return ev


def _loaded_java(m: re.Match[str], ev: Event) -> Event:
    ev["group_id"] = m[2]
    ev["group_kind"] = m[1]
    ev["event_type"] = "GROUP_LOADED"
    ev["n_members"] = int(m[3])
    return ev


_BUILDERS: dict[str, Builder] = {
    "prepare": _prepare, "stabilized": _stabilized, "sync": _sync, "empty": _empty, "dropped": _dropped,
    "dead": _dead, "expired": _expired, "leave_scala": _leave_scala, "pending_expired": _pending_expired,
    "pending_leave_scala": _pending_leave_scala, "pending_join": _pending_join, "dynamic_join": _dynamic_join,
    "static_join": _static_join, "leave_java": _leave_java, "k848_epoch": _k848_epoch,
    "k848_target": _k848_target, "k848_state": _k848_state, "k848_transition": _k848_transition,
    "k848_join": _k848_join, "k848_topics": _k848_topics, "k848_rejoin": _k848_rejoin, "k848_left": _k848_left,
    "k848_fenced": _k848_fenced,
    "unload_java": _unload_java, "load_scala": _load_scala, "unload_scala": _unload_scala,
    "loaded_java": _loaded_java,
}
#: _RULES with each kind's pattern and builder (None: static_rejoin, which needs the parser's state)
_DISPATCH: dict[str, tuple[tuple[str, str, re.Pattern[str], Builder | None], ...]] = {
    word: tuple((needle, kind, _PATTERNS[kind], _BUILDERS.get(kind)) for needle, kind in rules)
    for word, rules in _RULES.items()
}


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
        envelope = _ENVELOPE.match
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
        if _LOGGER.fullmatch(logger) is None:
            self.pending = (number, line)
            return None
        coordinator = self.loggers[logger] = logger in _LOGGERS
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
        rules = _DISPATCH.get(body[:space] if space > 0 else body)
        if rules is None and body.startswith("[GroupId="):
            rules = _DISPATCH["[GroupId="]
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
        millis_us = _MILLIS_US.get(line[21:24]) if line[20] == "," else None
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
        except EventError:
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
        m = _PREFIX.match(msg, 0, close)
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
        if tail < 0 or not text.endswith(")") or not _HEAD.match(text):
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
