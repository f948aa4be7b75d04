"""The broker-log adapter on real-format server.log lines (spec/replay-inputs.md §2)."""

from __future__ import annotations

import pytest

from rebalance_lab.replay.sources.broker_log import LocalClock, classify, reason_fields
from tests.unit.replay.adapter_support import parse_sample, parse_text, project, us

COLUMNS = ("seq", "event_type", "group_id", "generation", "prev_generation", "member_id", "n_members")
S = "(kafka.coordinator.group.GroupCoordinator)"
J = "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
JP = "[GroupCoordinator id=2 topic=__consumer_offsets partition=33]"


def test_scala_3x_lines_become_the_classic_events_in_the_brokers_zone() -> None:
    events, report = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    assert project(events, COLUMNS) == [
        (2, "MEMBER_JOIN_REQUEST", "orders", None, None, "consumer-orders-1-a4b1", None),
        (3, "REBALANCE_PREPARE", "orders", 1, 0, "consumer-orders-1-a4b1", None),
        (4, "JOIN_COMPLETE", "orders", 1, 0, None, 1),
        (5, "SYNC_LEADER_ASSIGNMENT", "orders", 1, None, None, 1),
        (6, "PENDING_MEMBER_EXPIRED", "orders", None, None, "consumer-orders-2-99f0", None),
        (7, "PENDING_MEMBER_EXPIRED", "orders", None, None, "consumer-orders-3-12ab", None),
        (8, "MEMBER_SESSION_EXPIRED", "orders", None, None, "consumer-orders-1-a4b1", None),
        (9, "REBALANCE_PREPARE", "orders", 2, 1, "consumer-orders-1-a4b1", None),
        (10, "GROUP_EMPTY", "orders", 2, None, None, 0),
        (11, "MEMBER_JOINED", "billing v2", None, None, "billing-a-77c1", None),
        (12, "REBALANCE_PREPARE", "billing v2", 4, 3, "billing-a-77c1", None),
        (13, "JOIN_COMPLETE", "billing v2", 4, 3, None, 2),
        (14, "SYNC_LEADER_ASSIGNMENT", "billing v2", 4, None, None, 2),
        (15, "STATIC_MEMBER_REPLACED", "billing v2", None, None, None, None),
        (16, "STATIC_MEMBER_REJOINED", "billing v2", None, None, None, None),
        (17, "MEMBER_LEFT", "billing v2", None, None, "billing-a-77c1", None),
        (18, "REBALANCE_PREPARE", "billing v2", 5, 4, "billing-a-77c1", None),
        (19, "MEMBERS_DROPPED_NOT_REJOINED", "billing v2", None, None, None, 2),
        (20, "JOIN_COMPLETE", "billing v2", 5, 4, None, 1),
        (21, "SYNC_LEADER_ASSIGNMENT", "billing v2", 5, None, None, 1),
        (22, "REBALANCE_PREPARE", "billing v2", 6, 5, None, None),
        (29, "GROUP_DEAD", "payments", 7, None, None, None),
        (31, "GROUP_LOADED", "billing v2", 5, None, None, None),
        (33, "GROUP_UNLOADED", "billing v2", 5, None, None, None),
    ]
    # other loggers, B12, the stack trace (3 lines), B15, Elected, Finished loading: ignored, never unparsable
    assert (report.lines, report.events, report.ignored, report.unparsed) == (33, 24, 9, 0)


def test_scala_prepare_line_carries_every_column_of_the_canonical_event() -> None:
    events, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    assert events[1] == {
        "schema_version": "rbl-event/1", "source": "broker_log", "source_ref": "broker-scala-3x.log:3", "seq": 3,
        "ts": us("2025-03-01 10:00:00.020", "Europe/Berlin"), "ts_kind": "log_line", "cluster_id": "default",
        "broker_id": 1, "coord_partition": 17, "group_id": "orders", "group_kind": "classic",
        "event_type": "REBALANCE_PREPARE", "prev_generation": 0, "generation": 1,
        "reason_raw": "Adding new member consumer-orders-1-a4b1 with group instance id None; "
                      "client reason: need to re-join with the given member-id: consumer-orders-1-a4b1",
        "reason_code": "member_join",
        "client_reason": "need to re-join with the given member-id: consumer-orders-1-a4b1",
        "member_id": "consumer-orders-1-a4b1",
    }
    assert events[1]["ts"] == 1740819600020000  # 10:00:00.020 CET is 09:00:00.020 UTC


def test_scala_leave_line_gives_the_members_metadata_and_supported_protocols() -> None:
    events, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    left = next(e for e in events if e["event_type"] == "MEMBER_LEFT")
    assert {k: left[k] for k in ("member_id", "group_instance_id", "client_id", "client_host", "session_timeout_ms",
                                 "rebalance_timeout_ms", "supported_protocols", "client_reason", "reason_code",
                                 "coord_partition")} == {
        "member_id": "billing-a-77c1", "group_instance_id": "billing-a", "client_id": "billing-client",
        "client_host": "/10.0.0.7", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
        "supported_protocols": ["range", "cooperative-sticky"], "client_reason": "the consumer is being closed",
        "reason_code": "member_leave", "coord_partition": 8,
    }


def test_static_lines_name_the_instance_and_the_replaced_member() -> None:
    events, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    static = [e for e in events if e["group_id"] == "billing v2" and "group_instance_id" in e][:4]
    assert project(static, ("event_type", "group_instance_id", "member_id", "raw")) == [
        ("MEMBER_JOINED", "billing-a", "billing-a-77c1", None),
        ("REBALANCE_PREPARE", "billing-a", "billing-a-77c1", None),
        ("STATIC_MEMBER_REPLACED", "billing-b", None, "replaced billing-b-0001"),
        ("STATIC_MEMBER_REJOINED", "billing-b", None, None),
    ]


def test_dropped_members_accept_scala_and_java_set_renderings() -> None:
    scala, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    java, _ = parse_sample("broker-java-4x.log", tz="America/New_York")
    dropped = [e for e in scala + java if e["event_type"] == "MEMBERS_DROPPED_NOT_REJOINED"]
    assert project(dropped, ("raw", "n_members")) == [
        ("consumer-x-1,consumer-x-2", 2), ("consumer-p-1,consumer-p-2", 2)]


def test_scala_lines_without_a_partition_reuse_the_one_learned_for_their_group() -> None:
    events, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin")
    assert [e["coord_partition"] for e in events if e["group_id"] == "orders"] == [None] + [17] * 8


def test_offsets_partitions_option_computes_the_partition_before_any_line_names_it() -> None:
    events, _ = parse_sample("broker-scala-3x.log", tz="Europe/Berlin", options={"offsets_partitions": 50})
    # Utils.abs("orders".hashCode()) = Utils.abs(-1008770331); % 50 = 31 (the sample's own lines say 17: a
    # partition printed by the broker wins over the computed one)
    assert events[0]["coord_partition"] == 31
    assert events[1]["coord_partition"] == 17


def test_old_scala_versions_parse_with_the_fields_they_have() -> None:
    events, report = parse_sample("broker-scala-2x.log")
    assert report.unparsed == 0
    assert project(events, ("event_type", "generation", "prev_generation", "leader_id", "n_members", "n_static",
                            "reason_code", "member_id")) == [
        ("REBALANCE_PREPARE", 6, 5, None, None, None, None, None),  # <= 2.2: no state, no reason
        ("JOIN_COMPLETE", 6, 5, None, None, None, None, None),  # <= 2.7: no member count
        ("SYNC_LEADER_ASSIGNMENT", 6, None, None, None, None, None, None),  # <= 2.7: no leader, no counts
        ("MEMBER_JOIN_REQUEST", None, None, None, None, None, "member_id_required", "consumer-legacy-4-0c"),
        ("REBALANCE_PREPARE", 7, 6, None, None, None, "member_metadata_change", "consumer-legacy-1-9a"),
        ("JOIN_COMPLETE", 7, 6, None, 2, None, None, None),
        ("SYNC_LEADER_ASSIGNMENT", 7, None, None, 2, 0, None, None),  # 2.8: counts, no leader
        ("MEMBER_JOINED", None, None, None, None, None, None, "consumer-legacy-5-1d"),  # capital "Member"
        ("REBALANCE_PREPARE", 8, 7, None, None, None, "leader_rejoin", "consumer-legacy-1-9a"),
        ("MEMBER_LEFT", None, None, None, None, None, "member_leave", "consumer-legacy-5-1d"),  # 3.0-3.1 text
        ("REBALANCE_PREPARE", 9, 8, None, None, None, "member_leave", "consumer-legacy-5-1d"),
        ("REBALANCE_PREPARE", 10, 9, None, None, None, "member_rejoin", "consumer-legacy-6-2e"),
        ("REBALANCE_PREPARE", 11, 10, None, None, None, "protocol_change", "legacy-s-3f"),
        ("REBALANCE_PREPARE", 12, 11, None, None, None, "over_capacity", None),
    ]
    assert events[9].get("client_reason") is None


def test_java_4x_lines_and_a_dst_fall_back_hour() -> None:
    events, report = parse_sample("broker-java-4x.log", tz="America/New_York")
    ny = "America/New_York"
    classic = [e for e in events if e["group_kind"] == "classic"]
    assert project(classic, ("seq", "event_type", "group_id", "generation", "member_id", "coord_partition")) == [
        (2, "MEMBER_JOIN_REQUEST", "orders", None, "consumer-orders-1-aa", 33),
        (3, "REBALANCE_PREPARE", "orders", 15, "consumer-orders-1-aa", 33),
        (4, "JOIN_COMPLETE", "orders", 15, None, 33),
        (5, "SYNC_LEADER_ASSIGNMENT", "orders", 15, None, 33),
        (6, "MEMBER_SESSION_EXPIRED", "orders", None, "consumer-orders-9-zz", 33),
        (7, "MEMBER_LEFT", "orders", None, "consumer-orders-1-aa", 33),
        (8, "REBALANCE_PREPARE", "orders", 16, "consumer-orders-1-aa", 33),
        (9, "GROUP_EMPTY", "orders", 16, None, 33),
        (10, "PENDING_MEMBER_EXPIRED", "orders", None, "consumer-orders-2-bb", 33),
        (11, "MEMBER_JOINED", "orders", None, "consumer-orders-3-cc", 33),
        (12, "MEMBER_JOINED", "payments", None, "pay-1-dd", 21),
        (13, "STATIC_MEMBER_REPLACED", "payments", None, None, 21),
        (14, "STATIC_MEMBER_REJOINED", "payments", None, None, 21),
        (15, "MEMBERS_DROPPED_NOT_REJOINED", "payments", None, None, 21),
        (16, "REBALANCE_PREPARE", "payments", 4, "consumer-p-3", 21),
        (17, "GROUP_LOADED", "payments", None, None, 21),
        (18, "GROUP_UNLOADED", "orders", 16, None, 33),
    ]
    assert all(e["broker_id"] == 2 for e in events)
    # 01:59:59.990 EDT, then the clock falls back: 01:00:00.500 is EST, after it, not an hour before
    assert [e["ts"] for e in events[4:7]] == [us("2025-11-02 01:59:59.990", ny), us("2025-11-02 01:00:00.500", ny, 1),
                                              us("2025-11-02 01:00:00.501", ny, 1)]
    assert events[5]["ts"] - events[4]["ts"] == 510_000
    assert (report.lines, report.ignored, report.unparsed) == (33, 3, 0)


def test_java_leave_and_reasons() -> None:
    events, _ = parse_sample("broker-java-4x.log", tz="America/New_York")
    left, prepare, pending = events[5], events[6], events[8]
    assert (left["event_type"], left["client_reason"], left["reason_code"]) == (
        "MEMBER_LEFT", "the consumer is being closed", "member_leave")
    assert (prepare["reason_code"], prepare["reason_raw"]) == (
        "member_leave", "explicit `LeaveGroup` request for (consumer-orders-1-aa) members.")
    assert (pending["event_type"], pending["reason_code"]) == ("PENDING_MEMBER_EXPIRED", "leave")
    payments_prepare = events[14]
    assert (payments_prepare["reason_code"], payments_prepare["member_id"]) == ("session_timeout", "consumer-p-3")


def test_kip_848_lines() -> None:
    events, _ = parse_sample("broker-java-4x.log", tz="America/New_York")
    k848 = [e for e in events if e["group_kind"] == "consumer"]
    assert project(k848, ("event_type", "member_id", "generation", "prev_generation", "protocol",
                          "group_instance_id", "reason_code", "raw")) == [
        ("MEMBER_JOINED", "m848a", None, None, None, None, None, None),
        ("K848_EPOCH_BUMP", None, 3, None, None, None, None, None),
        ("K848_TARGET_COMPUTED", None, 3, None, "uniform", None, None, None),
        ("K848_MEMBER_STATE", "m848a", 3, 2, None, None, None, "STABLE"),
        ("MEMBER_JOINED", "m848s", None, None, None, "inv-1", None, None),
        ("STATIC_MEMBER_REPLACED", "m848t", None, None, None, "inv-1", None, "replaced m848s"),
        ("K848_MEMBER_FENCED", "m848a", None, None, None, None, "session_timeout", None),
        ("K848_MEMBER_LEFT", "m848t", None, None, None, "inv-1", "static_temporary_leave", None),
        ("K848_MEMBER_LEFT", "m848b", None, None, None, None, "member_leave", None),
        ("K848_MEMBER_FENCED", "m848c", None, None, None, None, "rebalance_timeout", None),
        ("K848_MEMBER_STATE", "m848d", 3, 2, None, None, None, "stable"),
        ("GROUP_LOADED", None, None, None, None, None, None, None),
        ("GROUP_UNLOADED", None, 5, None, None, None, None, None),
    ]
    state = k848[3]
    assert state["partitions"] == [{"topic": "7l8rBsX6TMqbHE6QgWshdw", "partition": 0},
                                   {"topic": "7l8rBsX6TMqbHE6QgWshdw", "partition": 1}]
    assert state["partitions_pending_revocation"] == []
    assert k848[6]["reason_raw"] == "the member session expired"  # the doubled ".." is gone


@pytest.mark.parametrize(("reason", "code", "member", "client"), [
    ("Adding new member m-1 with group instance id null; client reason: not provided", "member_join", "m-1",
     "not provided"),
    ("Member m-2 is joining group during Stable; client reason: x", "member_rejoin", "m-2", "x"),
    ("Updating metadata for member m-3 during CompletingRebalance", "member_metadata_change", "m-3", None),
    ("Leader m-4 re-joining group during Stable", "leader_rejoin", "m-4", None),
    ("removing member m-5 on heartbeat expiration.", "session_timeout", "m-5", None),
    ("Removing member m-6 on LeaveGroup; client reason: the consumer is being closed", "member_leave", "m-6",
     "the consumer is being closed"),
    ("Removing [m-7, m-8] on pending sync request expiration", "sync_timeout", None, None),
    ("Updating metadata for static member m-9 with instance id i-9", "static_rejoin_metadata", "m-9", None),
    ("Freshly-loaded group g (size 5) is over capacity 4. Rebalancing in order to give a chance for consumers to "
     "commit offsets", "over_capacity", None, None),
    ("Error NOT_ENOUGH_REPLICAS when storing group assignment during SyncGroup (member: m-10)", "store_error", None,
     None),
    ("error NOT_COORDINATOR when storing group assignment during SyncGroup (member: m-10)", "store_error", None, None),
    ("Downgrade group g from consumer to classic.", "protocol_downgrade", None, None),
    ("explicit `LeaveGroup` request for (m-11, m-12) members.", "member_leave", None, None),
    ("something new in Kafka 5", "other", None, None),
])
def test_rebalance_reasons_normalise_to_the_spec_codes(reason: str, code: str, member: str | None,
                                                       client: str | None) -> None:
    ev: dict[str, object] = {}
    reason_fields(reason, ev)
    assert (ev["reason_raw"], ev["reason_code"], ev.get("member_id"), ev.get("client_reason")) == (
        reason, code, member, client)


def test_classification_uses_literals_and_leaves_unrelated_coordinator_lines_alone() -> None:
    assert classify("Preparing to rebalance group g with old generation 1 (__consumer_offsets-1)") == "prepare"
    assert classify("Group g could not complete rebalance because no members rejoined") is None
    assert classify("Group leader [member.id: a, group.instance.id: b] failed to join before rebalance timeout") is None
    assert classify("Elected as the group coordinator for partition 8 in epoch 3") is None
    assert classify("[GroupId=g] Unloading group metadata for generation 3.") == "unload_java"


def test_group_ids_with_spaces_and_brackets_match_lazily() -> None:
    text = (f"[2025-03-01 00:00:00,001] INFO {JP} Stabilized group my group (v2) generation 3 with 2 members. {J}\n"
            f"[2025-03-01 00:00:00,002] INFO {JP} [Group my ] group] Member m-1 has left group through explicit "
            f"`LeaveGroup` request; client reason: not provided {J}\n")
    events, report = parse_text(text, "broker-log")
    assert project(events, ("event_type", "group_id", "generation")) == [
        ("JOIN_COMPLETE", "my group (v2)", 3), ("MEMBER_LEFT", "my ] group", None)]
    assert report.unparsed == 0


def test_java_consumer_group_members_of_converted_groups_are_consumer_kind() -> None:
    text = (f"[2025-03-01 00:00:00,001] INFO {JP} [Group g] Static Member m-1 with instance id i-1 has left group "
            f"through explicit `LeaveGroup` request; client reason: not provided {J}\n")
    events, _ = parse_text(text, "broker-log")
    assert project(events, ("event_type", "group_kind", "member_id", "group_instance_id")) == [
        ("MEMBER_LEFT", "consumer", "m-1", "i-1")]


def test_malformed_and_truncated_lines_are_counted_and_the_good_ones_around_them_still_parse() -> None:
    scala = "INFO [GroupCoordinator 1]:"
    good = f"[2025-03-01 00:00:01,000] {scala} Stabilized group g generation 2 (__consumer_offsets-4) {S}"
    text = "\n".join([
        good,
        "garbage without an envelope",
        f"[2025-13-45 99:00:00,000] {scala} Stabilized group g generation 3 (__consumer_offsets-4) {S}",
        f"[2025-03-01 00:00:02,000] INFO [GroupCoordinator 1]: Stabilized group g generation x {S}",
        f"[2025-03-01 00:00:02,000] INFO [GroupCoordinator 1]: Assignment received from leader m for group {S}",
        "\x00\x01\ufffd\ufffd binary junk \x7f",
        good.replace("00:00:01", "00:00:03").replace("generation 2", "generation 4"),
        "[2025-03-01 00:00:04,000] INFO [GroupCoordinator 1]: Stabilized group g generation 5 (__consumer_offs",
    ]) + "\n"
    events, report = parse_text(text, "broker-log", name="server.log")
    assert project(events, ("seq", "generation")) == [(1, 2), (7, 4)]
    assert report.lines == 8
    assert report.unparsed == 6
    assert report.reasons == {"no envelope": 2, "bad timestamp": 1, "malformed stabilized": 1, "malformed sync": 1,
                              "truncated line": 1}
    assert report.samples[0] == {"ref": "server.log:2", "reason": "no envelope", "text": "garbage without an envelope"}


def test_a_multi_line_message_closed_by_its_logger_is_ignored_not_truncated() -> None:
    text = ("[2025-03-01 00:00:00,000] INFO KafkaConfig values: \n"
            "\tadvertised.listeners = PLAINTEXT://broker-1:9092\n"
            "\tgroup.initial.rebalance.delay.ms = 3000\n"
            " (kafka.server.KafkaConfig)\n"
            f"[2025-03-01 00:00:01,000] INFO [GroupCoordinator 1]: Stabilized group g generation 2 {S}\n")
    events, report = parse_text(text, "broker-log")
    assert len(events) == 1
    assert (report.lines, report.ignored, report.unparsed) == (5, 4, 0)


def test_a_static_rejoin_line_without_its_replace_line_is_reported() -> None:
    text = (f"[2025-03-01 00:00:00,000] INFO [GroupCoordinator 1]: Static member which joins during Stable stage "
            f"and doesn't affect selectProtocol will not trigger rebalance. {S}\n")
    events, report = parse_text(text, "broker-log")
    assert events == []
    assert report.reasons == {"malformed static_rejoin": 1}


def test_an_unknown_time_zone_is_a_clear_configuration_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        LocalClock("Mars/Olympus")


def test_clock_reads_log4j_and_iso_times() -> None:
    clock = LocalClock("Europe/Berlin")
    assert clock.log4j("2025-03-01 10:00:00,014") == us("2025-03-01 10:00:00.014", "Europe/Berlin")
    assert clock.any("2025-03-01T10:00:00.014+00:00") == us("2025-03-01 10:00:00.014")
    assert clock.any("2025-03-01T10:00:00,014Z") == us("2025-03-01 10:00:00.014")
    assert clock.any("2025-07-01 10:00:00.5") == us("2025-07-01 10:00:00.500", "Europe/Berlin")
    for bad in ("2025-02-30 00:00:00,000", "2025-03-01 10:00:00,0x4", "2025-03-01 24:00:00,000", "yesterday"):
        assert clock.any(bad) is None, bad


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"])
def test_clock_minute_cache_converts_like_a_fresh_clock(zone: str) -> None:
    # Seconds of a cached minute skip the validation and the hour lookup: they must convert (and reject bad
    # seconds) exactly as a clock that never saw the minute, also around DST changes (Lord Howe: 30 minutes).
    # The hours go forward, so the fold rule (which looks back at the previous second) agrees with a fresh clock.
    clock = LocalClock(zone)
    for day in ("2025-03-30 02", "2025-04-06 01", "2025-10-05 02", "2025-10-26 01", "2025-10-26 02"):
        for minute in ("00", "29", "59"):
            for second in ("00", "07", "59", "60", "6x", "7"):
                key = f"{day}:{minute}:{second}"
                assert clock.wall(key) == LocalClock(zone).wall(key), key


def test_clock_minute_cache_leaves_a_repeated_hour_to_the_fold_rule() -> None:
    clock = LocalClock("Europe/Berlin")
    assert clock.wall("2025-10-26 02:00:00") == us("2025-10-26 02:00:00.000", "Europe/Berlin") // 1_000_000
    clock.wall("2025-10-26 02:59:00")
    # Back an hour: the log entered the repeated hour, although the minute 02:00 was converted before.
    assert clock.wall("2025-10-26 02:00:07") == us("2025-10-26 02:00:07.000", "Europe/Berlin", fold=1) // 1_000_000
