"""The broker's group-coordinator INFO texts, per coordinator (spec/replay-inputs.md §2.1-§2.3).

``SCALA`` is the Kafka 3.x ``GroupCoordinator.scala`` (3.2+ texts: KIP-800 client reasons,
the leader id and member counts of B2/B3); ``JAVA`` the 4.x ``GroupMetadataManager.java``.
The keys name the spec's rows (B1 ...). ``pending_join`` is not in the spec's table: both
coordinators log it at INFO when a KIP-394 member comes back with its new id (Scala
``doCurrentMemberJoinGroup``, Java ``classicGroupJoinExistingMember``, checked against
``apache/kafka`` at 1eb7644349c).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SCALA = {
    "B1": "Preparing to rebalance group {g} in state PreparingRebalance with old generation {n} "
          "(__consumer_offsets-{p}) (reason: {reason})",
    "B2": "Stabilized group {g} generation {n} (__consumer_offsets-{p}) with {k} members",
    "B3": "Assignment received from leader {leader} for group {g} for generation {n}. "
          "The group has {k} members, {s} of which are static.",
    "B4": "Group {g} with generation {n} is now empty (__consumer_offsets-{p})",
    "B5": "Member {m} in group {g} has failed, removing it from the group",
    "B6": "Pending member {m} in group {g} has been removed after session timeout expiration.",
    "B7": "Dynamic member with unknown member id joins group {g} in {state} state. "
          "Created a new member id {m} and request the member to rejoin with this id.",
    "B7b": "Dynamic Member with unknown member id joins group {g} in {state} state. "
           "Created a new member id {m} for this member and add to the group.",
    "pending_join": "Pending dynamic member with id {m} joins group {g} in {state} state. Adding to the group now.",
    "B8": "Static member with groupInstanceId={i} and unknown member id joins group {g} in {state} state. "
          "Created a new member id {m} for this member and add to the group.",
    "B8_replace": "Static member with groupInstanceId={i} and unknown member id joins group {g} in {state} state. "
                  "Replacing previously mapped member {old} with this groupInstanceId.",
    "B9": "Member {member} has left group {g} through explicit `LeaveGroup`; client reason: {r}",
    "B10": "Pending member with memberId={m} has left group {g} through explicit `LeaveGroup` request",
    "B11": "Group {g} removed dynamic members who haven't joined: {ids}",
    "B14": "Group {g} transitioned to Dead in generation {n}",
}

JAVA = {
    "B1": "Preparing to rebalance group {g} in state PreparingRebalance with old generation {n} (reason: {reason}).",
    "B2": "Stabilized group {g} generation {n} with {k} members.",
    "B3": SCALA["B3"],
    "B4": "Group {g} with generation {n} is now empty.",
    "B5": "Member {m} in group {g} has failed, removing it from the group.",
    "B6": SCALA["B6"],
    "B7": "Dynamic member with unknown member id joins group {g} in {state} state. "
          "Created a new member id {m} and requesting the member to rejoin with this id.",
    "B7b": "Dynamic member with unknown member id joins group {g} in state {state}. "
           "Created a new member id {m} and added the member to the group.",
    "pending_join": SCALA["pending_join"],
    "B8": "Static member with groupInstanceId={i} and unknown member id joins group {g} in {state} state. "
          "Created a new member id {m} for this member and added to the group.",
    "B8_replace": SCALA["B8_replace"],
    "B9": "[Group {g}] Member {m} has left group through explicit `LeaveGroup` request; client reason: {r}",
    "B10": "[Group {g}] Pending member {m} has left group through explicit `LeaveGroup` request; client reason: {r}",
    "B11": SCALA["B11"],
}


def scala_set(ids: Sequence[str]) -> str:
    """A Scala ``Set`` as ``toString`` prints it."""
    return "Set(" + ", ".join(ids) + ")"


def java_set(ids: Sequence[str]) -> str:
    """A Java collection as ``toString`` prints it."""
    return "[" + ", ".join(ids) + "]"


def scala_option(value: str | None) -> str:
    return "None" if value is None else f"Some({value})"


def member_metadata(member_id: str, instance_id: str | None, client_id: str, client_host: str,
                    session_timeout_ms: int | None, rebalance_timeout_ms: int | None,
                    protocols: Sequence[str]) -> str:
    """Scala ``MemberMetadata.toString`` (B9)."""
    return (f"MemberMetadata(memberId={member_id}, groupInstanceId={scala_option(instance_id)}, "
            f"clientId={client_id}, clientHost={client_host}, sessionTimeoutMs={session_timeout_ms}, "
            f"rebalanceTimeoutMs={rebalance_timeout_ms}, supportedProtocols=List({', '.join(protocols)}))")


# ---------------------------------------------------------------- reasons (§2.3)
#
# A recording carries the reason text of the emulator's flavour (mostly the Java wording,
# also under kafka-3). The texts differ between the coordinators in a few places; these
# rewrite the known ones so each flavour logs its own. Unknown texts pass unchanged.

_INSTANCE_J = re.compile(r"^(Adding new member \S+ with group instance id )(null|\S+?)(;|$)")
_INSTANCE_S = re.compile(r"^(Adding new member \S+ with group instance id )(None|Some\((.*?)\))(;|$)")
_SYNC_J = re.compile(r"^Removing \[(.*)\] on pending sync request expiration$")
_SYNC_S = re.compile(r"^Removing Set\((.*)\) on pending sync request expiration$")
_LEAVE_J = re.compile(r"^explicit `LeaveGroup` request for \((.*)\) members\.$")
_LEAVE_S = re.compile(r"^Removing member (\S+) on LeaveGroup(?:; client reason: (.*))?$")
_HEARTBEAT = "on heartbeat expiration"


def reason_for_scala(reason: str) -> str:
    if _INSTANCE_S.match(reason):
        return reason  # already the Scala form (a reason read from a 3.x log): None / Some(x), not Some(None)
    match = _INSTANCE_J.match(reason)
    if match:
        instance = None if match.group(2) == "null" else match.group(2)
        return f"{match.group(1)}{scala_option(instance)}{match.group(3)}{reason[match.end():]}"
    if (match := _SYNC_J.match(reason)) is not None:
        return f"Removing Set({match.group(1)}) on pending sync request expiration"
    if (match := _LEAVE_J.match(reason)) is not None:
        first = match.group(1).split(", ")[0]
        return f"Removing member {first} on LeaveGroup; client reason: not provided"
    if reason.endswith(_HEARTBEAT + "."):
        return reason[:-1]
    return reason


def reason_for_java(reason: str) -> str:
    match = _INSTANCE_S.match(reason)
    if match:
        instance = "null" if match.group(2) == "None" else match.group(3)
        return f"{match.group(1)}{instance}{match.group(4)}{reason[match.end():]}"
    if (match := _SYNC_S.match(reason)) is not None:
        return f"Removing [{match.group(1)}] on pending sync request expiration"
    if (match := _LEAVE_S.match(reason)) is not None:
        return f"explicit `LeaveGroup` request for ({match.group(1)}) members."
    if reason.endswith(_HEARTBEAT):
        return reason + "."
    return reason
