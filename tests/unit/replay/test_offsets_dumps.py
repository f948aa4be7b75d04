"""The dump-log and console-json adapters on real-format __consumer_offsets dumps (spec §4.5, §4.6)."""

from __future__ import annotations

import base64
import json
from typing import Any

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription
from tests.unit.replay.adapter_support import parse_sample, parse_text, project

SNAPSHOT = ("event_type", "ts", "ts_kind", "group_id", "generation", "protocol", "leader_id", "n_members", "n_static")


def tps(topic: str, *partitions: int) -> list[dict[str, Any]]:
    return [{"topic": topic, "partition": p} for p in partitions]


def member(member_id: str, **fields: Any) -> dict[str, Any]:
    row = {"member_id": member_id, "group_instance_id": None, "client_id": None, "client_host": None, "rack_id": None,
           "session_timeout_ms": None, "rebalance_timeout_ms": None, "topics": None, "owned": None,
           "generation": None, "assignment": None}
    row.update(fields)
    return row


# --- dump-log >= 3.8 ----------------------------------------------------------------------------------------------

def test_dump_log_38_group_metadata_gives_join_end_and_snapshot() -> None:
    events, report = parse_sample("dump-log-3.8.txt")
    classic = [e for e in events if e["group_kind"] == "classic"]
    assert project(classic, SNAPSHOT) == [
        ("JOIN_COMPLETE", 1740823203021000, "current_state", "orders", 1, "range", "consumer-orders-1-a4b1", 1, 0),
        ("GENERATION_SNAPSHOT", 1740823203045000, "record_create", "orders", 1, "range", "consumer-orders-1-a4b1", 1,
         0),
        ("JOIN_COMPLETE", 1740820202500000, "current_state", "billing v2", 4, "cooperative-sticky", "billing-a-77c1",
         2, 2),
        ("GENERATION_SNAPSHOT", 1740820202530000, "record_create", "billing v2", 4, "cooperative-sticky",
         "billing-a-77c1", 2, 2),
        ("GROUP_EMPTY", 1740823500002000, "current_state", "orders", 2, None, None, 0, None),
        ("GENERATION_SNAPSHOT", 1740823500010000, "record_create", "orders", 2, None, None, 0, 0),
        ("GROUP_DEAD", 1740824000000000, "record_create", "payments", None, None, None, None, None),
    ]
    assert [e["source_ref"] for e in classic] == ["__consumer_offsets-17@0"] * 2 + ["__consumer_offsets-17@2"] * 2 + [
        "__consumer_offsets-17@3"] * 2 + ["__consumer_offsets-17@4"]
    assert {e["coord_partition"] for e in events} == {17}
    assert classic[0]["prev_generation"] == 0
    # header, starting offset, 3 batch lines, an offset commit, target member (7), unknown type, control record
    assert (report.lines, report.events, report.ignored, report.unparsed) == (20, 14, 9, 0)


def test_dump_log_38_members_come_from_decoded_json_and_from_base64_with_our_codec() -> None:
    events, _ = parse_sample("dump-log-3.8.txt")
    assert events[1]["members"] == [member(
        "consumer-orders-1-a4b1", client_id="consumer-orders-1", client_host="/10.0.0.5", session_timeout_ms=45000,
        rebalance_timeout_ms=300000, topics=["orders"], owned=[], generation=-1, assignment=tps("orders", 0, 1, 2))]
    assert events[3]["members"] == [
        member("billing-a-77c1", group_instance_id="billing-a", client_id="billing-client", client_host="/10.0.0.7",
               rack_id="rack-b", session_timeout_ms=45000, rebalance_timeout_ms=300000, topics=["billing-events"],
               owned=tps("billing-events", 1), generation=4, assignment=tps("billing-events", 1, 2)),
        member("billing-b-0002", group_instance_id="billing-b", client_id="billing-client", client_host="/10.0.0.8",
               rack_id="rack-a", session_timeout_ms=45000, rebalance_timeout_ms=300000, topics=["billing-events"],
               owned=tps("billing-events", 0), generation=4, assignment=tps("billing-events", 0)),
    ]


def test_dump_log_38_kip_848_records_map_best_effort() -> None:
    events, _ = parse_sample("dump-log-3.8.txt")
    k848 = [e for e in events if e["group_kind"] == "consumer"]
    assert project(k848, ("event_type", "group_id", "member_id", "generation", "prev_generation", "protocol",
                          "raw")) == [
        ("K848_EPOCH_BUMP", "inventory", None, 3, None, None, None),
        ("TOPIC_METADATA", "inventory", None, None, None, None, None),
        ("MEMBER_JOINED", "inventory", "m848a", None, None, "uniform", None),
        ("K848_TARGET_COMPUTED", "inventory", None, 3, None, None, None),
        ("K848_MEMBER_STATE", "inventory", "m848a", 3, 2, None, "STABLE"),
        ("K848_MEMBER_LEFT", "inventory", "m848a", None, None, None, None),
        ("GROUP_DEAD", "inventory", None, None, None, None, None),
    ]
    assert k848[1]["topic_partitions"] == {"inventory": 2}
    assert k848[2]["subscription"] == {"topics": ["inventory"], "owned": None, "generation": None, "rack": None}
    # the topic id is named by the earlier partition-metadata record
    assert (k848[4]["partitions"], k848[4]["partitions_pending_revocation"]) == (tps("inventory", 0, 1), [])


# --- dump-log <= 3.7 ----------------------------------------------------------------------------------------------

def test_dump_log_37_text_form_gives_partial_snapshots() -> None:
    events, report = parse_sample("dump-log-3.7.txt")
    assert project(events, ("event_type", "ts", "group_id", "generation", "protocol", "n_members", "source_ref")) == [
        ("GENERATION_SNAPSHOT", 1740823203045000, "orders", 1, "range", 2, "__consumer_offsets-5@0"),
        ("GENERATION_SNAPSHOT", 1740823300000000, "my group", 7, "cooperative-sticky", 2, "__consumer_offsets-5@2"),
        ("GENERATION_SNAPSHOT", 1740823400000000, "orders", 2, "range", 0, "__consumer_offsets-5@3"),
        ("GROUP_DEAD", 1740823500000000, "orders", None, None, None, "__consumer_offsets-5@4"),
    ]
    assert events[0]["members"] == [member("consumer-orders-1-a4b1", assignment=tps("orders", 0, 1)),
                                    member("consumer-orders-2-b5c6", assignment=tps("orders", 2))]
    # user data printed as hex after the list; a topic with dashes splits on the last one
    assert events[1]["members"] == [member("c1-x", assignment=tps("my-topic-v2", 0)), member("c2-y", assignment=[])]
    assert (report.lines, report.ignored, report.unparsed) == (8, 4, 0)


def test_partition_comes_from_the_file_name_when_there_is_no_dumping_header() -> None:
    line = ('| offset: 9 CreateTime: 1000 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] '
            'key: {"type":"2","data":{"group":"g"}} payload: <DELETE>\n')
    events, _ = parse_text(line, "dump-log", name="/data/__consumer_offsets-42/00000000000000000000.log.txt")
    assert project(events, ("source_ref", "coord_partition", "ts")) == [("__consumer_offsets-42@9", 42, 1_000_000)]
    events, _ = parse_text(line, "dump-log", name="dump.txt")
    assert project(events, ("source_ref", "coord_partition")) == [("dump.txt:1", None)]


def test_dump_log_malformed_records_are_counted_and_the_rest_still_parse() -> None:
    good = ('| offset: {o} CreateTime: 1740823203045 keySize: 10 valueSize: 9 sequence: 0 headerKeys: [] '
            'key: {{"type":"2","data":{{"group":"g"}}}} payload: {{"version":"3","data":{{"protocolType":"consumer",'
            '"generation":{o},"protocol":"range","leader":"m","currentStateTimestamp":1740823203000,"members":[{m}]}}}}')
    bad_b64 = ('{"memberId":"m","groupInstanceId":null,"clientId":"c","clientHost":"/h","rebalanceTimeout":1,'
               '"sessionTimeout":2,"subscription":"!!not base64!!","assignment":"AAA="}')
    lines = [
        "Dumping /d/__consumer_offsets-3/00000000000000000000.log",
        good.format(o=1, m=""),
        good.format(o=2, m="")[:-20],  # truncated JSON
        good.format(o=3, m=bad_b64),  # bad base64 subscription, undecodable assignment bytes
        "| offset: 4 CreateTime: 5 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: Error at offset 4, "
        "skipping. Unsupported version 99",
        "| offset: x CreateTime: 5",
        "what is this line",
        '| offset: 6 CreateTime: 6 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: {"type":"2","data":{}} '
        "payload: <DELETE>",
        good.format(o=7, m=""),
    ]
    events, report = parse_text("\n".join(lines) + "\n", "dump-log")
    assert project(events, ("event_type", "generation", "source_ref")) == [
        ("GROUP_EMPTY", 1, "__consumer_offsets-3@1"), ("GENERATION_SNAPSHOT", 1, "__consumer_offsets-3@1"),
        ("JOIN_COMPLETE", 3, "__consumer_offsets-3@3"), ("GENERATION_SNAPSHOT", 3, "__consumer_offsets-3@3"),
        ("GROUP_EMPTY", 7, "__consumer_offsets-3@7"), ("GENERATION_SNAPSHOT", 7, "__consumer_offsets-3@7"),
    ]
    # the snapshot with undecodable bytes still names its member, with what is known
    assert events[3]["members"] == [member("m", client_id="c", client_host="/h", session_timeout_ms=2,
                                           rebalance_timeout_ms=1)]
    assert report.reasons == {"broken JSON": 1, "undecodable subscription": 1, "undecodable assignment": 1,
                              "dump-log could not decode the record": 1, "malformed record header": 1,
                              "not a dump-log line": 1, "key without a group": 1}
    assert (report.lines, report.ignored) == (9, 1)


# --- console-json (4.x) -------------------------------------------------------------------------------------------

def test_console_json_decodes_base64_with_our_codec_and_times_events_by_current_state() -> None:
    events, report = parse_sample("console-4x.json")
    assert project(events, (*SNAPSHOT, "seq")) == [
        ("JOIN_COMPLETE", 1740823203021000, "current_state", "orders", 2, "range", "consumer-orders-1-a4b1", 2, 0, 1),
        ("GENERATION_SNAPSHOT", 1740823203021000, "current_state", "orders", 2, "range", "consumer-orders-1-a4b1", 2,
         0, 1),
        ("JOIN_COMPLETE", 1740820202500000, "current_state", "billing v2", 4, "cooperative-sticky", "billing-a-77c1",
         1, 1, 2),
        ("GENERATION_SNAPSHOT", 1740820202500000, "current_state", "billing v2", 4, "cooperative-sticky",
         "billing-a-77c1", 1, 1, 2),
        ("GROUP_EMPTY", 1740823500002000, "current_state", "orders", 3, None, None, 0, None, 2),
        ("GENERATION_SNAPSHOT", 1740823500002000, "current_state", "orders", 3, None, None, 0, 0, 2),
        ("JOIN_COMPLETE", 1740823600000000, "current_state", "connect-cluster", 9, "sessioned", "connect-1-x", 1, 0,
         4),
        ("GENERATION_SNAPSHOT", 1740823600000000, "current_state", "connect-cluster", 9, "sessioned", "connect-1-x",
         1, 0, 4),
        # the tombstone is timed by the group's latest currentStateTimestamp (a lower bound)
        ("GROUP_DEAD", 1740823500002000, "current_state", "orders", None, None, None, None, None, 5),
    ]
    assert events[1]["members"] == [
        member("consumer-orders-1-a4b1", client_id="consumer-orders-1", client_host="/10.0.0.5",
               session_timeout_ms=45000, rebalance_timeout_ms=300000, topics=["orders"], owned=[], generation=-1,
               assignment=tps("orders", 0, 1)),
        member("consumer-orders-2-b5c6", client_id="consumer-orders-2", client_host="/10.0.0.6",
               session_timeout_ms=45000, rebalance_timeout_ms=300000, topics=["orders"], owned=tps("orders", 2),
               generation=1, assignment=tps("orders", 2)),
    ]
    assert events[3]["members"][0]["rack_id"] == "rack-b"
    assert events[7]["members"][0]["assignment"] is None  # connect groups keep opaque bytes
    assert (report.lines, report.events, report.ignored, report.unparsed) == (5, 9, 1, 0)


def _console(group: str, value: dict[str, Any] | None, key: str = "type") -> str:
    return json.dumps({"key": {key: 2, "data": {"group": group}},
                       "value": None if value is None else {"version": 3, "data": value}}, separators=(",", ":"))


def test_console_json_round_trips_our_encoder_including_rack_and_user_data() -> None:
    sub = encode_subscription(Subscription(topics=("t-a", "t"), user_data=b"\x00\x00\x00\x07",
                                           owned_partitions=(TopicPartition("t-a", 3),), generation_id=7,
                                           rack_id="r1"))
    assignment = encode_assignment(Assignment(partitions=(TopicPartition("t-a", 3), TopicPartition("t", 0)),
                                              user_data=b"\x01"))
    value = {"protocolType": "consumer", "generation": 8, "protocol": "sticky", "leader": "m",
             "currentStateTimestamp": 5, "members": [{
                 "memberId": "m", "groupInstanceId": "i", "clientId": "c", "clientHost": "/h", "rebalanceTimeout": 1,
                 "sessionTimeout": 2, "subscription": base64.b64encode(sub).decode(),
                 "assignment": base64.b64encode(assignment).decode()}]}
    events, report = parse_text(_console("g", value) + "\n", "console-json")
    assert events[1]["members"] == [member(
        "m", group_instance_id="i", client_id="c", client_host="/h", rack_id="r1", session_timeout_ms=2,
        rebalance_timeout_ms=1, topics=["t", "t-a"], owned=tps("t-a", 3), generation=7,
        assignment=tps("t-a", 3) + tps("t", 0))]
    assert report.unparsed == 0


def test_console_json_reads_concatenated_objects_and_resyncs_after_broken_ones() -> None:
    value = {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": None,
             "currentStateTimestamp": 1000, "members": []}
    one = _console("g", value)
    line = one + _console("h", value, key="version") + '{"key":{"type":2,"data":{"gro' + one.replace('"g"', '"k"')
    events, report = parse_text(line + "\n", "console-json")
    assert [(e["group_id"], e["event_type"]) for e in events] == [
        ("g", "GROUP_EMPTY"), ("g", "GENERATION_SNAPSHOT"), ("h", "GROUP_EMPTY"), ("h", "GENERATION_SNAPSHOT"),
        ("k", "GROUP_EMPTY"), ("k", "GENERATION_SNAPSHOT")]
    assert report.reasons == {"broken JSON": 1}


def test_console_json_malformed_input_is_counted() -> None:
    bad_assignment = {"protocolType": "consumer", "generation": 2, "protocol": "range", "leader": "m",
                      "currentStateTimestamp": 7, "members": [{"memberId": "m", "subscription": "AAE=",
                                                               "assignment": "%%%"}]}
    no_time = {"protocolType": "consumer", "generation": 2, "protocol": "range", "leader": "m", "members": []}
    lines = [
        _console("g", bad_assignment),
        "not json at all",
        '["a", "list"]',
        _console("g", no_time),
        _console("never-seen", None),
        "",
        _console("g", {"protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "m",
                       "currentStateTimestamp": 9, "members": []}),
    ]
    events, report = parse_text("\n".join(lines) + "\n", "console-json")
    assert project(events, ("event_type", "generation", "seq")) == [
        ("JOIN_COMPLETE", 2, 1), ("GENERATION_SNAPSHOT", 2, 1), ("GROUP_EMPTY", 3, 7), ("GENERATION_SNAPSHOT", 3, 7)]
    assert events[1]["members"][0]["topics"] is None and events[1]["members"][0]["assignment"] is None
    assert report.reasons == {"undecodable subscription": 1, "undecodable assignment": 1, "broken JSON": 1,
                              "not a coordinator record": 1, "no timestamp": 1,
                              "tombstone with no earlier record of its group to time it": 1}
    assert (report.lines, report.ignored) == (7, 1)


def test_console_json_offsets_partitions_option_names_the_coordinator_partition() -> None:
    value = {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": None,
             "currentStateTimestamp": 1, "members": []}
    events, _ = parse_text(_console("orders", value) + "\n", "console-json", options={"offsets_partitions": 50})
    assert {e["coord_partition"] for e in events} == {31}
