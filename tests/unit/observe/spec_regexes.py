"""The regexes of spec/replay-inputs.md §2.1 and §2.5, verbatim (split into short string pieces).

They live in the tests on purpose: the replay adapters write their own, and the renderers
must produce lines that the spec's regexes, the contract both sides share, accept.
"""

from __future__ import annotations

import re

# §2.1: group 1 = ts, 2 = level, 3 = message, 4 = logger
ENVELOPE = re.compile(
    r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) "
    r"\(([\w.$]+)\)$"
)
PREFIX = re.compile(
    r"^(?:\[GroupCoordinator (\d+)\]: |\[GroupMetadataManager brokerId=(\d+)\] |\[GroupCoordinat"
    r"or id=(\d+) topic=(\S+) partition=(\d+)\] )"
)

# §2.5, applied to the message after the prefix
MESSAGE = {
    "prepare": re.compile(
        r"^Preparing to rebalance group (.+?) in state (\w+) with old generation (-?\d+)(?: \(__cons"
        r"umer_offsets-(\d+)\))? \(reason: (.*)\)\.?$"
    ),
    "stabilized": re.compile(
        r"^Stabilized group (.+?) generation (\d+)(?: \(__consumer_offsets-(\d+)\))?(?: with (\d+) m"
        r"embers)?\.?$"
    ),
    "sync_leader": re.compile(
        r"^Assignment received from leader (?:(\S+) )?for group (.+?) for generation (\d+)(?:\. The "
        r"group has (\d+) members, (\d+) of which are static\.)?$"
    ),
    "empty": re.compile(r"^Group (.+?) with generation (\d+) is now empty(?: \(__consumer_offsets-(\d+)\)|\.)$"),
    "hb_expired": re.compile(r"^Member (\S+) in group (.+?) has failed, removing it from the group\.?$"),
    "pending_exp": re.compile(
        r"^Pending member (\S+) in group (.+?) has been removed after session timeout expiration\.$"
    ),
    "dyn_join": re.compile(
        r"^Dynamic [Mm]ember with unknown member id (?:re)?joins group (.+?) in (?:state )?(\w+)(?: "
        r"state)?\. Created a new member id (\S+) (and request(?:ing)? the member to rejoin|for this"
        r" member and add|and added the member)"
    ),
    "static_join": re.compile(
        r"^Static member with groupInstanceId=(.+?) and unknown member id joins group (.+?) in (\w+)"
        r" state\. (?:Replacing previously mapped member (\S+) with this groupInstanceId\.|Created a"
        r" new member id (\S+) for this member and add(?:ed)? to the group\.)$"
    ),
    "leave_scala": re.compile(
        r"^Member MemberMetadata\(memberId=(.*?), groupInstanceId=(.*?), clientId=(.*?), clientHost="
        r"(.*?), sessionTimeoutMs=(\d+), rebalanceTimeoutMs=(\d+), supportedProtocols=List\((.*?)\)\)"
        r" has left group (.+?) through explicit `LeaveGroup`(?:; client reason: (.*)| request)$"
    ),
    "leave_java": re.compile(
        r"^\[Group (.+?)\] (?:(Dynamic|Static|Pending) )?[Mm]ember (\S+) (?:with instance id (\S+) )"
        r"?has left group through explicit `LeaveGroup` request; client reason: (.*)$"
    ),
    "removed_nj": re.compile(r"^Group (.+?) removed dynamic members who haven't joined: (.*)$"),
    "dead": re.compile(r"^Group (.+?) transitioned to Dead in generation (\d+)$"),
}
