"""The group coordinator's ``server.log`` messages: which loggers, prefixes and texts, and their reasons (§2.1-§2.4).

Split from broker_log.py: the literal rules (first word, then one ``in`` test) that name a
message's kind, the one regex per kind, and the rebalance reasons' codes (§2.3 table). The
builders (:mod:`._broker_builders`) turn a kind's match into an event.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from rebalance_lab.replay.event_rows import parse_tp

Event = dict[str, Any]

# --- loggers and prefixes (§2.1) -------------------------------------------------------------------------------------

COORDINATOR_LOGGERS = frozenset({
    "kafka.coordinator.group.GroupCoordinator",
    "kafka.coordinator.group.GroupMetadataManager",
    "kafka.coordinator.group.GroupMetadata$",
    "org.apache.kafka.coordinator.group.GroupMetadataManager",
    "org.apache.kafka.coordinator.group.GroupCoordinatorShard",
})
# Ids of at most 10 digits (Kafka's are int32): int() refuses a number of more than 4,300 digits (a damaged line).
PREFIX = re.compile(r"\[(?:GroupCoordinator (?:id=)?(\d{1,10})(?: topic=\S+ partition=(\d{1,10}))?|"
                     r"GroupMetadataManager brokerId=(\d{1,10}))$")


# --- message kinds: first word -> [(needle, kind)], then one regex per kind ---------------------------------------

RULES: dict[str, tuple[tuple[str, str], ...]] = {
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
PATTERNS: dict[str, re.Pattern[str]] = {name: re.compile(pattern) for name, pattern in {
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
    rules = RULES.get(word)
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


def epoch_tp_list(text: str) -> list[dict[str, Any]]:
    """A KIP-848 member state's partitions: ``<topic id>-<p>``, in Kafka 4.1+ ``<topic id>-<p>@<epoch>`` (the
    epoch the partition was assigned in; a topic name or id never contains ``@``)."""
    return [parse_tp(item.partition("@")[0]) for item in text.split(", ") if item.strip()]
