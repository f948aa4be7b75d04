"""Broker ``server.log`` lines: the spec's exact templates (§2.2), samples (§2.6) and regexes (§2.1, §2.5)."""

from __future__ import annotations

import re

import pytest

from rebalance_lab.observe.formats import FormatError, broker_log, render
from tests.unit.observe.events import Events, lifecycle
from tests.unit.observe.spec_regexes import ENVELOPE, MESSAGE, PREFIX

SCALA_MESSAGES = [
    "Dynamic member with unknown member id joins group orders in Empty state. Created a new member id m1 and "
    "request the member to rejoin with this id.",
    # (no "Pending dynamic member ... Adding to the group now.": Kafka 3.x logs it at DEBUG)
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 0 (__consumer_offsets-17) "
    "(reason: Adding new member m1 with group instance id None; client reason: need to re-join with the given "
    "member-id: m1)",
    "Static member with groupInstanceId=inst-1 and unknown member id joins group orders in PreparingRebalance "
    "state. Created a new member id s1 for this member and add to the group.",
    "Stabilized group orders generation 1 (__consumer_offsets-17) with 2 members",
    "Assignment received from leader m1 for group orders for generation 1. The group has 2 members, 1 of which "
    "are static.",
    "Static member with groupInstanceId=inst-1 and unknown member id joins group orders in Stable state. "
    "Replacing previously mapped member s1 with this groupInstanceId.",
    "Dynamic Member with unknown member id joins group orders in Stable state. Created a new member id m3 for "
    "this member and add to the group.",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 1 (__consumer_offsets-17) "
    "(reason: Adding new member m3 with group instance id None; client reason: not provided)",
    "Dynamic member with unknown member id joins group orders in PreparingRebalance state. Created a new member "
    "id m4 and request the member to rejoin with this id.",
    "Pending member m4 in group orders has been removed after session timeout expiration.",
    "Dynamic member with unknown member id joins group orders in PreparingRebalance state. Created a new member "
    "id m5 and request the member to rejoin with this id.",
    "Pending member with memberId=m5 has left group orders through explicit `LeaveGroup` request",
    "Group orders removed dynamic members who haven't joined: Set(m3, m9)",
    "Stabilized group orders generation 2 (__consumer_offsets-17) with 2 members",
    "Assignment received from leader m1 for group orders for generation 2. The group has 2 members, 1 of which "
    "are static.",
    "Member m1 in group orders has failed, removing it from the group",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 2 (__consumer_offsets-17) "
    "(reason: removing member m1 on heartbeat expiration)",
    "Stabilized group orders generation 3 (__consumer_offsets-17) with 1 members",
    "Assignment received from leader s2 for group orders for generation 3. The group has 1 members, 1 of which "
    "are static.",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 3 (__consumer_offsets-17) "
    "(reason: Removing member s2 on LeaveGroup; client reason: not provided)",
    "Group orders with generation 4 is now empty (__consumer_offsets-17)",
    "Member MemberMetadata(memberId=s2, groupInstanceId=Some(inst-1), clientId=c2, clientHost=/10.0.0.5, "
    "sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group orders "
    "through explicit `LeaveGroup`; client reason: not provided",
    "Group orders transitioned to Dead in generation 4",
]
SCALA_REGEXES = ["dyn_join", "prepare", "static_join", "stabilized", "sync_leader", "static_join", "dyn_join",
                 "prepare", "dyn_join", "pending_exp", "dyn_join", None, "removed_nj", "stabilized", "sync_leader",
                 "hb_expired", "prepare", "stabilized", "sync_leader", "prepare", "empty", "leave_scala", "dead"]

JAVA_MESSAGES = [
    "Dynamic member with unknown member id joins group orders in Empty state. Created a new member id m1 and "
    "requesting the member to rejoin with this id.",
    "Pending dynamic member with id m1 joins group orders in Empty state. Adding to the group now.",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 0 (reason: Adding new "
    "member m1 with group instance id null; client reason: need to re-join with the given member-id: m1).",
    "Static member with groupInstanceId=inst-1 and unknown member id joins group orders in PreparingRebalance "
    "state. Created a new member id s1 for this member and added to the group.",
    "Stabilized group orders generation 1 with 2 members.",
    "Assignment received from leader m1 for group orders for generation 1. The group has 2 members, 1 of which "
    "are static.",
    "Static member with groupInstanceId=inst-1 and unknown member id joins group orders in Stable state. "
    "Replacing previously mapped member s1 with this groupInstanceId.",
    "Dynamic member with unknown member id joins group orders in state Stable. Created a new member id m3 and "
    "added the member to the group.",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 1 (reason: Adding new "
    "member m3 with group instance id null; client reason: not provided).",
    "Dynamic member with unknown member id joins group orders in PreparingRebalance state. Created a new member "
    "id m4 and requesting the member to rejoin with this id.",
    "Pending member m4 in group orders has been removed after session timeout expiration.",
    "Dynamic member with unknown member id joins group orders in PreparingRebalance state. Created a new member "
    "id m5 and requesting the member to rejoin with this id.",
    "[Group orders] Pending member m5 has left group through explicit `LeaveGroup` request; client reason: "
    "not provided",
    "Group orders removed dynamic members who haven't joined: [m3, m9]",
    "Stabilized group orders generation 2 with 2 members.",
    "Assignment received from leader m1 for group orders for generation 2. The group has 2 members, 1 of which "
    "are static.",
    "Member m1 in group orders has failed, removing it from the group.",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 2 (reason: removing "
    "member m1 on heartbeat expiration.).",
    "Stabilized group orders generation 3 with 1 members.",
    "Assignment received from leader s2 for group orders for generation 3. The group has 1 members, 1 of which "
    "are static.",
    "[Group orders] Member s2 has left group through explicit `LeaveGroup` request; client reason: not provided",
    "Preparing to rebalance group orders in state PreparingRebalance with old generation 3 (reason: explicit "
    "`LeaveGroup` request for (s2) members.).",
    "Group orders with generation 4 is now empty.",
]
JAVA_REGEXES = ["dyn_join", None, "prepare", "static_join", "stabilized", "sync_leader", "static_join", "dyn_join",
                "prepare", "dyn_join", "pending_exp", "dyn_join", "leave_java", "removed_nj", "stabilized",
                "sync_leader", "hb_expired", "prepare", "stabilized", "sync_leader", "leave_java", "prepare", "empty"]


def split(line: str) -> tuple[str, str, str, str, re.Match[str]]:
    """(ts, level, logger, message after the prefix, the prefix match), through the spec's regexes."""
    envelope = ENVELOPE.match(line)
    assert envelope, line
    ts, level, message, logger = envelope.groups()
    prefix = PREFIX.match(message)
    assert prefix, message
    return ts, level, logger, message[prefix.end():], prefix


def matching(body: str) -> list[str]:
    return [name for name, rx in MESSAGE.items() if rx.match(body)]


@pytest.mark.parametrize(("fmt", "messages", "regexes"), [
    ("broker-log-scala", SCALA_MESSAGES, SCALA_REGEXES),
    ("broker-log-java", JAVA_MESSAGES, JAVA_REGEXES),
])
def test_a_group_lifecycle_renders_the_spec_templates_word_for_word(
    fmt: str, messages: list[str], regexes: list[str | None],
) -> None:
    assert {e["event_type"] for e in lifecycle()} >= broker_log.RENDERED  # every type that has a line
    lines = list(render(lifecycle(), fmt))
    assert [split(line)[3] for line in lines] == messages
    # every line matches the §2.5 regex of its type, and only that one (the two None are lines the
    # spec has no regex for: a parser skips them)
    assert [next(iter(matching(split(line)[3])), None) for line in lines] == regexes
    assert all(len(matching(split(line)[3])) <= 1 for line in lines)


def test_scala_lines_carry_the_scala_prefix_logger_and_offsets_partition() -> None:
    lines = list(render(lifecycle(), "broker-log-scala"))
    for line in lines:
        _, level, logger, body, prefix = split(line)
        assert level == "INFO"
        if body.startswith("Group orders transitioned to Dead"):
            assert (prefix.group(2), logger) == ("1", "kafka.coordinator.group.GroupMetadataManager")
        else:
            assert (prefix.group(1), logger) == ("1", "kafka.coordinator.group.GroupCoordinator")
    prepare = MESSAGE["prepare"].match(split(lines[1])[3])
    assert prepare and prepare.groups() == (
        "orders", "PreparingRebalance", "0", "17",
        "Adding new member m1 with group instance id None; client reason: need to re-join with the given member-id: m1")


def test_java_lines_name_the_coordinator_and_its_offsets_partition_in_the_prefix() -> None:
    for line in render(lifecycle(), "broker-log-java"):
        _, level, logger, _, prefix = split(line)
        assert (level, logger) == ("INFO", "org.apache.kafka.coordinator.group.GroupMetadataManager")
        assert prefix.groups()[2:] == ("1", "__consumer_offsets", "17")


def test_the_spec_sample_lines_come_out_verbatim() -> None:
    """§2.6: three Scala-coordinator lines and two Java-coordinator lines."""
    scala = Events()
    scala.prepare(14, 41, "removing member consumer-orders-1-2f… on heartbeat expiration.", "session_timeout")
    scala.complete(2830, 42, "consumer-orders-1-a4…", 3)
    scala.sync(2833, 42, "consumer-orders-1-a4…", 3)
    assert list(render(scala.rows, "broker-log-scala")) == [
        "[2025-03-01 00:00:00,014] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state "
        "PreparingRebalance with old generation 41 (__consumer_offsets-17) (reason: removing member "
        "consumer-orders-1-2f… on heartbeat expiration) (kafka.coordinator.group.GroupCoordinator)",
        "[2025-03-01 00:00:02,830] INFO [GroupCoordinator 1]: Stabilized group orders generation 42 "
        "(__consumer_offsets-17) with 3 members (kafka.coordinator.group.GroupCoordinator)",
        "[2025-03-01 00:00:02,833] INFO [GroupCoordinator 1]: Assignment received from leader consumer-orders-1-a4… "
        "for group orders for generation 42. The group has 3 members, 0 of which are static. "
        "(kafka.coordinator.group.GroupCoordinator)",
    ]
    java = Events()
    java.prepare(77, 14, "Adding new member consumer-orders-8-20… with group instance id null; client reason: "
                         "need to re-join with the given member-id: consumer-orders-8-20…", "member_join")
    java.complete(21465, 15, "consumer-orders-8-20…", 9)
    assert list(render(java.rows, "broker-log-java")) == [
        "[2025-03-01 00:00:00,077] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=17] Preparing to "
        "rebalance group orders in state PreparingRebalance with old generation 14 (reason: Adding new member "
        "consumer-orders-8-20… with group instance id null; client reason: need to re-join with the given "
        "member-id: consumer-orders-8-20…). (org.apache.kafka.coordinator.group.GroupMetadataManager)",
        "[2025-03-01 00:00:21,465] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=17] Stabilized "
        "group orders generation 15 with 9 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)",
    ]


def test_scala_logs_an_explicit_leave_after_the_rebalance_it_starts_and_java_before() -> None:
    e = Events()
    e.joined(0, "a", "ca")
    e.joined(0, "b", "cb")
    e.left(5, "a", leader="b")
    e.prepare(5, 1, "Removing member a on LeaveGroup; client reason: the consumer is being closed", "member_leave")
    e.rejoin(6, "b", 1)
    scala = [split(line)[3][:20] for line in render(e.rows, "broker-log-scala")]
    java = [split(line)[3][:20] for line in render(e.rows, "broker-log-java")]
    assert scala[-2:] == ["Preparing to rebalan", "Member MemberMetadat"]
    assert java[-2:] == ["[Group orders] Membe", "Preparing to rebalan"]
    assert "(reason: explicit `LeaveGroup` request for (a) members.)." in list(render(e.rows, "broker-log-java"))[-1]


@pytest.mark.parametrize("cause", ["sync_timeout", "group_max_size"])
def test_a_member_removed_without_a_leave_request_has_no_leave_line(cause: str) -> None:
    e = Events()
    e.joined(0, "a", "ca")
    e.left(1, "a", cause=cause)
    assert [split(line)[3][:7] for line in render(e.rows, "broker-log-scala")] == ["Dynamic"]  # B7b only


@pytest.mark.parametrize("event_type", ["GENERATION_SNAPSHOT", "TOPIC_METADATA", "FAULT_INJECTED",
                                        "CLIENT_JOINED", "K848_EPOCH_BUMP"])
def test_event_types_without_an_info_line_render_nothing(event_type: str) -> None:
    e = Events()
    e.add(event_type, 0, generation=1, members=[], topic_partitions={"t": 1})
    e.created(1)
    assert list(render(e.rows, "broker-log-scala")) == list(render(e.rows, "broker-log-java")) == []


def test_the_java_coordinator_logs_nothing_when_a_group_dies() -> None:
    e = Events()
    e.add("GROUP_DEAD", 0, generation=3)
    assert list(render(e.rows, "broker-log-java")) == []
    assert [split(line)[3] for line in render(e.rows, "broker-log-scala")] == [
        "Group orders transitioned to Dead in generation 3"]


def test_reasons_are_worded_as_each_coordinator_words_them() -> None:
    e = Events()
    e.prepare(0, 3, "Removing [a, b] on pending sync request expiration", "sync_timeout")
    e.prepare(1, 4, "Adding new member x with group instance id i-1; client reason: not provided", "member_join")
    e.prepare(2, 5, "Removing member a on LeaveGroup; client reason: the consumer is being closed", "member_leave")
    reasons = {fmt: [MESSAGE["prepare"].match(split(line)[3]).group(5)  # type: ignore[union-attr]
                     for line in render(e.rows, fmt)] for fmt in ("broker-log-scala", "broker-log-java")}
    assert reasons == {
        "broker-log-scala": ["Removing Set(a, b) on pending sync request expiration",
                             "Adding new member x with group instance id Some(i-1); client reason: not provided",
                             "Removing member a on LeaveGroup; client reason: the consumer is being closed"],
        "broker-log-java": ["Removing [a, b] on pending sync request expiration",
                            "Adding new member x with group instance id i-1; client reason: not provided",
                            "explicit `LeaveGroup` request for (a) members."],
    }


def test_timestamps_are_broker_local_time_in_the_given_zone_truncated_to_milliseconds() -> None:
    e = Events()
    e.add("MEMBER_SESSION_EXPIRED", 0, member_id="m")
    e.rows[0]["ts"] = "2025-03-01T23:30:00.123987+00:00"  # microseconds from the emulator's clock
    e.add("MEMBER_SESSION_EXPIRED", 0, member_id="m")
    e.rows[1]["ts"] = 1_751_412_600_456  # epoch milliseconds: 2025-07-01 23:30:00.456 UTC
    stamps = [split(line)[0] for line in render(e.rows, "broker-log-java", tz="Europe/Berlin")]
    assert stamps == ["2025-03-02 00:30:00,123", "2025-07-02 01:30:00,456"]  # CET, then CEST
    assert [split(line)[0] for line in render(e.rows, "broker-log-java")] == [
        "2025-03-01 23:30:00,123", "2025-07-01 23:30:00,456"]


def test_the_offsets_partition_follows_the_java_hash_rule_unless_the_event_names_one() -> None:
    def java_hash(s: str) -> int:
        h = 0
        for ch in s:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return h - (1 << 32) if h >= 1 << 31 else h

    e = Events(group="polygenelubricants", coord_partition=None)  # hashCode() == Integer.MIN_VALUE
    e.add("GROUP_EMPTY", 0, generation=2)
    e2 = Events(group="orders", coord_partition=None, broker_id=None)
    e2.add("GROUP_EMPTY", 0, generation=2)
    assert java_hash("polygenelubricants") == -(1 << 31)
    assert split(next(render(e.rows, "broker-log-java")))[4].group(5) == "0"  # Utils.abs(MIN_VALUE) = 0
    assert split(next(render(e2.rows, "broker-log-java")))[4].groups()[2:] == ("0", "__consumer_offsets",
                                                                              str(abs(java_hash("orders")) % 50))
    assert split(next(render(e2.rows, "broker-log-java", offsets_partitions=7)))[4].group(5) == str(
        abs(java_hash("orders")) % 7)


def test_a_broker_id_option_overrides_the_recorded_coordinator() -> None:
    assert {split(line)[4].group(1) for line in render(lifecycle(), "broker-log-scala", broker_id=5)
            if split(line)[4].group(1)} == {"5"}


def test_noise_lines_are_interleaved_without_changing_the_group_lines() -> None:
    plain = list(render(lifecycle(), "broker-log-scala"))
    noisy = list(render(lifecycle(), "broker-log-scala", noise=True))
    assert len(noisy) > len(plain) + len(plain) // broker_log.NOISE_EVERY

    def is_noise(line: str) -> bool:
        envelope = ENVELOPE.match(line)
        return (envelope is None or envelope.group(4) not in (broker_log.SCALA_LOGGER, broker_log.SCALA_METADATA_LOGGER)
                or "expired offsets in" in line)

    assert [line for line in noisy if not is_noise(line)] == plain
    extra = [line for line in noisy if line not in plain]
    assert any(not ENVELOPE.match(line) for line in extra)  # a stack trace's continuation lines
    assert any(" WARN " in line for line in extra)
    assert any(line.startswith("[") and "[GroupMetadataManager brokerId=1] Removed 0 expired offsets" in line
               for line in extra)  # shares the coordinator's prefix; matches no §2.5 regex
    prefixed = [line for line in extra if (envelope := ENVELOPE.match(line)) and PREFIX.match(envelope.group(3))]
    assert prefixed and not [line for line in prefixed if matching(split(line)[3])]


def test_bad_options_are_clear_errors() -> None:
    with pytest.raises(FormatError, match="unknown time zone 'Mars/Olympus'"):
        render(lifecycle(), "broker-log-scala", tz="Mars/Olympus")
    with pytest.raises(FormatError, match="unknown broker log flavour"):
        broker_log.render(lifecycle(), "cobol")
    with pytest.raises(FormatError, match="broker-log-java does not take layout"):
        render(lifecycle(), "broker-log-java", layout="%m")
    with pytest.raises(FormatError, match="unknown format 'syslog'"):
        render(lifecycle(), "syslog")
