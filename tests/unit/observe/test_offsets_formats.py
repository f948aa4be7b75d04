"""``__consumer_offsets`` renderings: dump-log ``--offsets-decoder`` (Kafka >= 3.8) and the console JSON (§4.5)."""

from __future__ import annotations

import base64
import json
import re
import struct
from typing import Any

from kafka.record.default_records import DefaultRecordBatch

from rebalance_lab.observe.formats import render
from rebalance_lab.observe.formats._offsets_records import RecordBuilder
from rebalance_lab.observe.formats.dump_log import batch_bytes
from rebalance_lab.protocol.consumer_protocol import decode_assignment, decode_subscription
from tests.unit.observe.events import Events, member_row

MS0 = 1_740_787_200_000  # 2025-03-01 00:00 UTC
# §4.5's tolerant dump-log patterns
TIME = re.compile(r"(CreateTime|LogAppendTime): (-?\d+)")
OFFSET = re.compile(r"offset: (\d+)")
KEY_PAYLOAD = re.compile(r" key: (.*?) payload: (.*)$")


def one_generation() -> Events:
    e = Events()
    e.created(0)
    e.joined(1, "m1", "c1")
    e.prepare(1, 0, "Adding new member m1 with group instance id null; client reason: not provided", "member_join")
    e.complete(4, 1, "m1", 1)
    e.sync(5, 1, "m1", 1)
    e.snapshot(5, 1, "m1", [member_row("m1", "c1", [("orders", 0)])])
    return e


def test_a_snapshot_is_one_batch_and_one_decoded_record_line() -> None:
    """As a 3.8/3.9 broker writes it (no sequence, no record at creation), for a member whose subscription holds
    nothing but its topics: kafka-python's version 0 with empty user data, as in the real brokers' dumps."""
    assert list(render(one_generation().rows, "dump-log-3")) == [
        "Dumping /var/lib/kafka/data/__consumer_offsets-17/00000000000000000000.log",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {MS0 + 5} size: 200 magic: 2 compresscodec: none crc: "
        f"{struct.unpack_from('>I', batch_bytes(*_record_bytes(one_generation()), 0, MS0 + 5, 0), 17)[0]} "
        "isvalid: true",
        f"| offset: 0 CreateTime: {MS0 + 5} keySize: 10 valueSize: 120 sequence: -1 headerKeys: [] "
        'key: {"type":"2","data":{"group":"orders"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        f'"generation":1,"protocol":"range","leader":"m1","currentStateTimestamp":{MS0 + 4},"members":[{{'
        '"memberId":"m1","groupInstanceId":null,"clientId":"c1","clientHost":"/10.0.0.5","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["orders"],"userData":""},'
        '"assignment":{"assignedPartitions":[{"topic":"orders","partitions":[0]}],"userData":""}}]}}',
    ]


def _record_bytes(e: Events) -> tuple[bytes, bytes | None]:
    record = next(RecordBuilder(kafka=3).records(e.rows))
    return record.key_bytes(), record.value_bytes()


def read_value(data: bytes) -> dict[str, Any]:
    """A test-side reader of GroupMetadataValue v3 (non-flexible: int16 string lengths, int32 bytes)."""
    pos = 0

    def take(fmt: str) -> Any:
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    def string() -> str | None:
        nonlocal pos
        n = take(">h")
        if n < 0:
            return None
        pos += n
        return data[pos - n:pos].decode()

    def raw() -> bytes:
        nonlocal pos
        n = take(">i")
        pos += n
        return data[pos - n:pos]

    out: dict[str, Any] = {"version": take(">h"), "protocolType": string(), "generation": take(">i"),
                           "protocol": string(), "leader": string(), "currentStateTimestamp": take(">q")}
    out["members"] = [{"memberId": string(), "groupInstanceId": string(), "clientId": string(),
                       "clientHost": string(), "rebalanceTimeout": take(">i"), "sessionTimeout": take(">i"),
                       "subscription": raw(), "assignment": raw()} for _ in range(take(">i"))]
    assert pos == len(data)
    return out


def test_the_batches_are_real_v2_batches_whose_records_hold_the_printed_payload() -> None:
    e = one_generation()
    e.snapshot(9, 1, "m1", [member_row("m1", "c1", [("orders", 0), ("audit", 2)], instance="i-1",
                                       owned=[("orders", 0)], generation=1, rack="r1")])
    lines = list(render(e.rows, "dump-log"))
    batches = [line for line in lines if line.startswith("baseOffset: ")]
    records = [line for line in lines if line.startswith("| offset: ")]
    position = 0
    for n, (batch_line, record_line, record) in enumerate(zip(batches, records, RecordBuilder().records(e.rows),
                                                              strict=True)):
        raw = batch_bytes(record.key_bytes(), record.value_bytes(), n, record.create_time, 0, 0)  # 4.x: sequence 0
        batch = DefaultRecordBatch(raw)
        assert batch.validate_crc() and batch.base_offset == n
        (kafka_record,) = list(batch)
        assert (kafka_record.key, kafka_record.value, kafka_record.timestamp) == (
            record.key_bytes(), record.value_bytes(), record.create_time)
        assert f"position: {position} " in batch_line and f" size: {len(raw)} " in batch_line
        assert f" crc: {batch.crc} isvalid: true" in batch_line
        position += len(raw)
        assert OFFSET.search(record_line).group(1) == str(n)  # type: ignore[union-attr]
        assert TIME.search(record_line).groups() == ("CreateTime", str(record.create_time))  # type: ignore[union-attr]
        payload = json.loads(KEY_PAYLOAD.search(record_line).group(2))  # type: ignore[union-attr]
        value = read_value(kafka_record.value)
        assert {k: v for k, v in value.items() if k not in ("version", "members")} == {
            k: v for k, v in payload["data"].items() if k != "members"}
        if not value["members"]:
            continue  # the record of the group's creation (4.x)
        member = value["members"][0]
        shown = payload["data"]["members"][0]
        assert shown["subscription"]["topics"] == list(decode_subscription(member["subscription"]).topics)
    last = json.loads(KEY_PAYLOAD.search(records[-1]).group(2))["data"]["members"][0]  # type: ignore[union-attr]
    assert last["groupInstanceId"] == "i-1"
    assert last["subscription"] == {"topics": ["audit", "orders"], "userData": None,
                                    "ownedPartitions": [{"topic": "orders", "partitions": [0]}], "generationId": 1,
                                    "rackId": "r1"}
    assert last["assignment"] == {"assignedPartitions": [{"topic": "orders", "partitions": [0]},
                                                         {"topic": "audit", "partitions": [2]}], "userData": None}


def test_an_empty_generation_is_a_record_without_members_and_a_deleted_group_a_tombstone() -> None:
    e = one_generation()
    e.left(7, "m1")
    e.prepare(7, 1, "explicit `LeaveGroup` request for (m1) members.", "member_leave")
    e.add("GROUP_EMPTY", 7, generation=2, n_members=0)
    e.add("GROUP_DEAD", 9, generation=2)
    assert len([line for line in render(e.rows, "dump-log-3") if line.startswith("| ")]) == 3  # 3.x: no creation
    records = [line for line in render(e.rows, "dump-log") if line.startswith("| ")]
    assert len(records) == 4  # 4.x: the JoinGroup that created the group wrote an empty record
    created = json.loads(KEY_PAYLOAD.search(records.pop(0)).group(2))  # type: ignore[union-attr]
    assert created == {"version": "3", "data": {"protocolType": "", "generation": 0, "protocol": None,
                                                "leader": None, "currentStateTimestamp": MS0, "members": []}}
    empty = json.loads(KEY_PAYLOAD.search(records[1]).group(2))  # type: ignore[union-attr]
    assert empty == {"version": "3", "data": {"protocolType": "consumer", "generation": 2, "protocol": None,
                                              "leader": None, "currentStateTimestamp": MS0 + 7, "members": []}}
    assert records[2].endswith(' key: {"type":"2","data":{"group":"orders"}} payload: <DELETE>')
    assert f"CreateTime: {MS0 + 9} keySize: 10 valueSize: -1 " in records[2]


def test_groups_on_different_offsets_partitions_are_dumped_file_by_file() -> None:
    a, b = Events(group="a", coord_partition=None), Events(group="b", coord_partition=None)
    a.add("GROUP_EMPTY", 0, generation=1)
    b.add("GROUP_EMPTY", 1, generation=1)
    a.add("GROUP_EMPTY", 2, generation=2)
    rows = [a.rows[0], b.rows[0], a.rows[1]]
    lines = list(render(rows, "dump-log", log_dir="/data/"))
    assert [line for line in lines if line.startswith("Dumping")] == [
        "Dumping /data/__consumer_offsets-47/00000000000000000000.log",  # "a".hashCode() = 97
        "Dumping /data/__consumer_offsets-48/00000000000000000000.log",
    ]
    assert [OFFSET.search(line).group(1) for line in lines if line.startswith("| ")] == ["0", "1", "0"]  # type: ignore[union-attr]


def test_the_console_formatter_prints_one_json_object_per_record_with_base64_protocol_bytes() -> None:
    e = one_generation()
    e.snapshot(9, 1, "m1", [member_row("m1", "c1", [("orders", 3), ("orders", 1)], instance="i-1",
                                       owned=[("orders", 1)], generation=1, rack="r1")])
    e.add("GROUP_DEAD", 10, generation=1)
    lines = list(render(e.rows, "console-json"))[1:]  # after the group's creation (4.x)
    assert lines[0] == (
        '{"key":{"type":2,"data":{"group":"orders"}},"value":{"version":3,"data":{"protocolType":"consumer",'
        f'"generation":1,"protocol":"range","leader":"m1","currentStateTimestamp":{MS0 + 4},"members":[{{'
        '"memberId":"m1","groupInstanceId":null,"clientId":"c1","clientHost":"/10.0.0.5","rebalanceTimeout":300000,'
        # v0 subscription (topics only: kafka-python's): 0000 | 1 topic "orders" | userData length 0
        '"sessionTimeout":45000,"subscription":"AAAAAAABAAZvcmRlcnMAAAAA",'
        # v0 assignment of a kafka-python leader: 0000 | 1 topic "orders" [0] | userData length 0
        '"assignment":"AAAAAAABAAZvcmRlcnMAAAABAAAAAAAAAAA="}]}}}')
    assert lines[2] == '{"key":{"type":2,"data":{"group":"orders"}},"value":null}'
    member = json.loads(lines[1])["value"]["data"]["members"][0]
    sub = decode_subscription(base64.b64decode(member["subscription"]))
    assert (sub.topics, [tuple(tp) for tp in sub.owned_partitions], sub.generation_id, sub.rack_id) == (
        ("orders",), [("orders", 1)], 1, "r1")
    assert [tuple(tp) for tp in decode_assignment(base64.b64decode(member["assignment"])).partitions] == [
        ("orders", 3), ("orders", 1)]
    assert len(lines) == 3
