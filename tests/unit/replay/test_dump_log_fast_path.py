"""The adapters' fast paths give exactly what their general paths give, and the ids they make are shared.

dump-log reads GroupMetadata records in the shape dump-log prints through typed structs
(:class:`~rebalance_lab.replay.sources.dump_log.GroupMetadataReader`) and hands anything else to the general
``json`` path. Every record here is parsed both ways (the fast path switched off for the second), and the
events, their key order and the parse report must be the same, malformed records included.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription
from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.member_rows import FIELDS, Compactor
from rebalance_lab.replay.sources import FORMATS, SHARED_COLUMNS, SourceContext, dump_log
from tests.unit.replay.adapter_support import parse_sample


def record(payload: str, *, key: str = '{"type":"2","data":{"group":"g"}}', offset: int = 1,
           header: str = "CreateTime: 1740823203045") -> str:
    return (f"| offset: {offset} {header} keySize: 10 valueSize: 9 sequence: 0 headerKeys: [] "
            f"key: {key} payload: {payload}")


def member_json(member_id: str = "c-1", **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "memberId": member_id, "groupInstanceId": None, "clientId": "c", "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300000, "sessionTimeout": 45000,
        "subscription": {"topics": ["t1", "t2"], "userData": None,
                         "ownedPartitions": [{"topic": "t1", "partitions": [0]}], "generationId": 3, "rackId": "r1"},
        "assignment": {"assignedPartitions": [{"topic": "t1", "partitions": [0, 2]},
                                              {"topic": "t2", "partitions": [1]}], "userData": None},
    }
    row.update(fields)
    return row


def value_json(*members: dict[str, Any], **fields: Any) -> str:
    data: dict[str, Any] = {"protocolType": "consumer", "generation": 4, "protocol": "range", "leader": "c-1",
                            "currentStateTimestamp": 1740823203000, "members": list(members)}
    data.update(fields)
    return json.dumps({"version": "3", "data": data}, separators=(",", ":"))


B64_SUBSCRIPTION = base64.b64encode(encode_subscription(Subscription(
    ("t1",), owned_partitions=(TopicPartition("t1", 1),), generation_id=2, rack_id="r2"))).decode()
B64_ASSIGNMENT = base64.b64encode(encode_assignment(Assignment((TopicPartition("t1", 1),)))).decode()

RECORDS = {
    "canonical": record(value_json(member_json(), member_json("c-2", groupInstanceId="i-2", clientHost="/h2"))),
    "repeated texts": record(value_json(member_json(), member_json("c-3")), offset=2),
    "no members": record(value_json()),
    "members null": record(value_json(members=None)),
    "members absent": record('{"version":"3","data":{"protocolType":"consumer","generation":1,'
                             '"protocol":null,"leader":null,"currentStateTimestamp":5}}'),
    "v0 value": record('{"version":"0","data":{"protocolType":"consumer","generation":2,"protocol":"range",'
                       '"leader":"m","members":[{"memberId":"m","clientId":"c","clientHost":"/h",'
                       '"sessionTimeout":10000,"subscription":{"topics":["t1"],"userData":null},'
                       '"assignment":{"assignedPartitions":[{"topic":"t1","partitions":[0]}],"userData":null}}]}}'),
    "value without version": record('{"data":{"protocolType":"consumer","generation":2,"members":[]}}'),
    "subscription v0": record(value_json(member_json(subscription={"topics": ["t1"], "userData": None}))),
    "subscription and assignment absent": record(value_json({"memberId": "m", "clientId": "c"})),
    "subscription empty object": record(value_json(member_json(subscription={}, assignment={}))),
    "base64 subscription": record(value_json(member_json(subscription=B64_SUBSCRIPTION,
                                                         assignment=B64_ASSIGNMENT))),
    "empty assignment bytes": record(value_json(member_json(assignment=""))),
    "bad base64": record(value_json(member_json(subscription="!!not base64!!", assignment="AAA="),
                                    member_json("c-2", subscription="!!still not!!"))),
    "connect group": record(value_json(member_json(subscription="AAEC", assignment="AAED"), protocolType="connect")),
    "connect group, other JSON": record(value_json(member_json(assignment={"anything": [1, 2]}),
                                                   protocolType="connect")),
    "protocol type empty": record(value_json(member_json(), protocolType="")),
    "null subscription fields": record(value_json(member_json(subscription={"topics": None,
                                                                            "ownedPartitions": None}))),
    "unknown field": record(value_json(member_json(), extra={"x": 1})),
    "unknown member field": record(value_json(member_json(extra=1))),
    "NaN in unknown field": record(value_json(member_json(), extra=float("nan"))),
    "huge int in unknown field": record(value_json(member_json()).replace('"members"', '"x":' + "9" * 5000
                                                                           + ',"members"')),
    "huge int in generation": record(value_json(member_json()).replace('"generation":4', '"generation":' + "9" * 5000)),
    "big int in generation": record(value_json(member_json(), generation=2 ** 70)),
    "duplicate keys": record(value_json(member_json()).replace('"generation":4', '"generation":4,"generation":5')),
    "float generation": record(value_json(member_json(), generation=4.0)),
    "bool timeout": record(value_json(member_json(sessionTimeout=True))),
    "string partition": record(value_json(member_json(assignment={"assignedPartitions": [
        {"topic": "t1", "partitions": ["1", 2]}], "userData": None}))),
    "float partition": record(value_json(member_json(assignment={"assignedPartitions": [
        {"topic": "t1", "partitions": [1.0, 2.5]}], "userData": None}))),
    "negative and repeated partitions": record(value_json(member_json(assignment={"assignedPartitions": [
        {"topic": "t1", "partitions": [-1, 0, 0]}], "userData": None}))),
    "number as topic": record(value_json(member_json(assignment={"assignedPartitions": [
        {"topic": 7, "partitions": [0]}], "userData": None}))),
    "user data bytes": record(value_json(member_json(assignment={"assignedPartitions": [], "userData": "AAE="}))),
    "user data object": record(value_json(member_json(assignment={"assignedPartitions": [], "userData": {}}))),
    "member not an object": record(value_json(member_json(), 5)),  # type: ignore[arg-type]
    "member id null": record(value_json(member_json(None))),  # type: ignore[arg-type]
    "lone surrogate escape": record(value_json(member_json("c-\ud800"))),
    "escapes": record(value_json(member_json("c-\u00e9\\\"/\t"))),
    "state timestamp null": record(value_json(member_json(), currentStateTimestamp=None)),
    "state timestamp -1": record(value_json(member_json(), currentStateTimestamp=-1)),
    "no timestamp at all": record(value_json(member_json(subscription="!!bad!!"), currentStateTimestamp=-1),
                                  header="LogAppendTime: -1"),
    "spaces": record(value_json(member_json()).replace(",", ", "), key='{"type": "2", "data": {"group": "g"}}'),
    "version key": record(value_json(member_json()), key='{"version":"2","data":{"group":"g v2"}}'),
    "payload marker in the group": record(value_json(member_json()),
                                          key='{"type":"2","data":{"group":"a} payload: {b"}}'),
    "key with another field": record(value_json(member_json()), key='{"type":"2","data":{"group":"g","x":1}}'),
    "key without a group": record(value_json(member_json()), key='{"type":"2","data":{}}'),
    "group not a string": record(value_json(member_json()), key='{"type":"2","data":{"group":5}}'),
    "tombstone": record("<DELETE>"),
    "truncated": record(value_json(member_json()))[:-30],
    "trailing text": record(value_json(member_json()) + " x"),
    "value not an object": record("[1,2]"),
}


def parse(lines: list[str], compact: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ctx = SourceContext(name="/d/__consumer_offsets-3.dump.txt", report=ParseReport(), compact_members=compact)
    events = list(FORMATS["dump-log"].parse([line + "\n" for line in lines], ctx))
    return events, ctx.report.to_dict()


@pytest.fixture
def general_path_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as patch:
        patch.setattr(dump_log.GroupMetadataReader, "read", lambda self, key_text: None)
        yield


def both_paths(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = parse(lines)
    with monkeypatch.context() as patch:
        patch.setattr(dump_log.GroupMetadataReader, "read", lambda self, key_text: None)
        general = parse(lines)
    return fast, general


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_fast_path_gives_what_the_general_path_gives(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [RECORDS["canonical"], RECORDS[name], RECORDS["repeated texts"], RECORDS[name]]
    (fast, fast_report), (general, general_report) = both_paths(lines, monkeypatch)
    # json.dumps without sort_keys: the same values and the same key order, members included
    assert json.dumps(fast, default=repr) == json.dumps(general, default=repr)
    assert fast_report == general_report


def test_all_records_together_and_the_fast_path_takes_the_dump_log_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = list(RECORDS.values())
    (fast, fast_report), (general, general_report) = both_paths(lines, monkeypatch)
    assert json.dumps(fast, default=repr) == json.dumps(general, default=repr)
    assert fast_report == general_report
    taken = []
    read = dump_log.GroupMetadataReader.read

    def spy(self: dump_log.GroupMetadataReader, key_text: str) -> Any:
        found = read(self, key_text)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(dump_log.GroupMetadataReader, "read", spy)
    for name in ("canonical", "v0 value", "subscription v0", "base64 subscription", "connect group", "spaces",
                 "version key", "no members", "members null", "duplicate keys", "escapes"):
        taken.clear()
        parse([RECORDS[name]])
        assert taken == [True], name
    for name in ("unknown field", "NaN in unknown field", "huge int in unknown field", "float generation",
                 "payload marker in the group", "tombstone", "truncated", "lone surrogate escape"):
        taken.clear()
        parse([RECORDS[name]])
        assert taken in ([False], []), name


def test_malformed_records_are_still_reported_with_their_reasons() -> None:
    names = ("huge int in generation", "truncated", "key without a group", "group not a string", "bad base64",
             "no timestamp at all", "value not an object", "trailing text")
    events, report = parse([RECORDS[name] for name in names])
    assert report["reasons"] == {"broken JSON": 3, "key without a group": 2, "undecodable subscription": 3,
                                 "undecodable assignment": 1, "no timestamp": 1, "malformed value": 1}
    assert [e["event_type"] for e in events] == ["JOIN_COMPLETE", "GENERATION_SNAPSHOT"]  # "bad base64"


def test_tps_and_lists_are_shared_within_an_input() -> None:
    events, _ = parse([RECORDS["canonical"], RECORDS["repeated texts"]])
    snapshots = [e for e in events if e["event_type"] == "GENERATION_SNAPSHOT"]
    first, second = snapshots[0]["members"], snapshots[1]["members"]
    assert first[0]["assignment"] is second[0]["assignment"]  # the same assignment text
    assert first[0]["topics"] is first[1]["topics"]
    assert first[0]["owned"][0] is first[0]["assignment"][0]  # one dict per topic-partition
    assert first[0]["assignment"] == [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 2},
                                      {"topic": "t2", "partition": 1}]


def test_a_partition_list_text_is_read_once_whether_owned_or_assigned() -> None:
    partitions = [{"topic": "t1", "partitions": [0, 2]}, {"topic": "t2", "partitions": [1]}]
    # t1's partition 0 is known before the list is read, 2 is not: the group is started again, not repeated
    first = member_json("c-1", assignment={"assignedPartitions": [{"topic": "t1", "partitions": [0]}],
                                           "userData": None})
    second = member_json("c-2", subscription={"topics": ["t1", "t2"], "userData": None,
                                              "ownedPartitions": partitions, "generationId": 4, "rackId": None},
                         assignment={"assignedPartitions": partitions, "userData": None})
    events, report = parse([record(value_json(first, second))])
    rows = next(e for e in events if e["event_type"] == "GENERATION_SNAPSHOT")["members"]
    assert rows[1]["owned"] is rows[1]["assignment"]  # the same text, whitespace and all
    assert rows[1]["assignment"] == [{"topic": "t1", "partition": 0}, {"topic": "t1", "partition": 2},
                                     {"topic": "t2", "partition": 1}]
    assert rows[1]["assignment"][0] is rows[0]["assignment"][0]
    assert not report["reasons"]


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_compact_member_rows_are_what_the_spark_tasks_compactor_makes_of_the_dict_rows(name: str) -> None:
    # The Spark tasks ask for member rows as tuples (SourceContext.compact_members) and pass every event through
    # their Compactor, which converts what is still a dict (the general path's rows); the single process reads
    # dicts. Whatever path a record takes (fast, general, partly read by the general path, refused), the task gets
    # the same events, in the same order, with the same report, as from the dict rows.
    lines = [RECORDS["canonical"], RECORDS[name], RECORDS["repeated texts"], RECORDS[name]]
    (compact, compact_report), (dicts, dict_report) = parse(lines, compact=True), parse(lines)
    assert [Compactor().event(e) for e in compact] == [Compactor().event(e) for e in dicts]
    assert [list(e) for e in compact] == [list(e) for e in dicts]  # the key order too
    assert compact_report == dict_report
    fast, _ = parse([RECORDS["canonical"], RECORDS["repeated texts"]], compact=True)
    for event in fast:  # what the fast path took is left as tuples: nothing for the Compactor to do
        assert all(m.__class__ is tuple for m in event.get("members") or ())


def test_compact_rows_share_their_lists_and_tps_as_the_dict_rows_do() -> None:
    events, _ = parse([RECORDS["canonical"], RECORDS["repeated texts"]], compact=True)
    snapshots = [e for e in events if e["event_type"] == "GENERATION_SNAPSHOT"]
    first, second = snapshots[0]["members"], snapshots[1]["members"]
    topics, owned, assignment = FIELDS.index("topics"), FIELDS.index("owned"), FIELDS.index("assignment")
    assert first[0][assignment] is second[0][assignment]
    assert first[0][topics] is first[1][topics] == ("t1", "t2")
    assert first[0][owned][0] is first[0][assignment][0]
    assert first[0][assignment] == (("t1", 0), ("t1", 2), ("t2", 1))


def interned(value: str) -> bool:
    return sys.intern("".join(list(value))) is value  # a fresh copy interns to this very object


@pytest.mark.parametrize("sample", ["dump-log-3.8.txt", "dump-log-3.7.txt", "broker-java-4x.log",
                                    "broker-scala-2x.log", "broker-scala-3x.log"])
def test_adapters_that_intern_their_ids_themselves_leave_none_out(sample: str) -> None:
    events, _ = parse_sample(sample)
    assert events
    assert FORMATS[events[0]["source"].replace("offsets_dumplog", "dump-log").replace("_", "-")].interns
    for event in events:
        for column in SHARED_COLUMNS:
            value = event.get(column)
            assert value is None or interned(value), (column, event)
        for row in event.get("members") or ():
            assert all(interned(row[c]) for c in ("member_id", "client_id", "client_host") if row[c] is not None)
