"""The ConsumerGroupHeartbeat fast path agrees with the generic codec and kio, byte for byte.

Random requests (nulls, empty arrays, owned partitions) are encoded by the generic (schema) codec, which
``test_codec_vs_kafka_python.py`` checks against kafka-python's, and read by the fast path; random
responses are written by the fast path and must equal the generic encoding and read back identically
through kio. Unusual input (tagged fields, damage) is left to the generic codec, so the verdict on it,
MalformedRequest or a skipped tag, is the generic one.
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.protocol import codec, heartbeat_codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.protocol.heartbeat_codec import Assignment, HeartbeatResponse, TopicPartitions
from tests.unit.protocol import kio_oracle
from tests.unit.protocol.fast_path_checks import assert_the_generic_verdict, damaged, outcome, payload

SCHEMAS = Path(codec.__file__).parent / "schemas"
INT32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=12)
NULLABLE_TEXT = st.none() | TEXT
ERROR_CODES = st.sampled_from([int(code) for code in ErrorCode])  # kio reads only codes Kafka knows
TOPICS = st.lists(st.builds(TopicPartitions, st.uuids(), st.lists(INT32, max_size=5)), max_size=4)


@st.composite
def requests(draw: st.DrawFn) -> tuple[int, str | None, Any]:
    version = draw(st.sampled_from(heartbeat_codec.VERSIONS))
    owned = draw(st.none() | TOPICS)
    fields: dict[str, Any] = dict(
        group_id=draw(TEXT), member_id=draw(TEXT), member_epoch=draw(INT32), instance_id=draw(NULLABLE_TEXT),
        rack_id=draw(NULLABLE_TEXT), rebalance_timeout_ms=draw(INT32),
        subscribed_topic_names=draw(st.none() | st.lists(TEXT, max_size=4)), server_assignor=draw(NULLABLE_TEXT),
        topic_partitions=None if owned is None else [
            codec.request_type(68).TopicPartitions(topic_id=t.topic_id, partitions=t.partitions) for t in owned],
    )
    if version >= 1:
        fields["subscribed_topic_regex"] = draw(NULLABLE_TEXT)
    if draw(st.booleans()):  # a plain heartbeat, which the fast path reads inline
        fields = {name: fields[name] for name in ("group_id", "member_id", "member_epoch")}
    return version, draw(st.none() | TEXT), codec.new_request(68, version, **fields)


def _payload(version: int, client_id: str | None, request: Any) -> bytes:
    return payload(request, client_id)


@given(requests())
@settings(max_examples=300, deadline=None)
def test_the_fast_path_decodes_any_request_as_the_generic_codec_does(case: tuple[int, str | None, Any]) -> None:
    payload = _payload(*case)
    fast = heartbeat_codec.decode_request(payload)
    assert fast is not None
    assert outcome(codec.decode_request, payload) == outcome(codec.decode_request_generic, payload)
    assert codec.encode_body(fast[2], case[0]) == codec.encode_body(case[2], case[0])


@given(requests(), st.data())
@settings(max_examples=300, deadline=None)
def test_damaged_requests_get_the_generic_codecs_verdict(
    case: tuple[int, str | None, Any], data: st.DataObject
) -> None:
    assert_the_generic_verdict(damaged(_payload(*case), data))


def _with_tag(payload: bytes, at: int) -> bytes:
    """Replace the empty tagged-field section at ``at`` with one unknown tag (7) of 3 bytes."""
    assert payload[at] == 0
    return payload[:at] + b"\x01\x07\x03abc" + payload[at + 1 :]


def test_unknown_tagged_fields_in_header_and_body_are_skipped() -> None:
    request = codec.new_request(68, 1, group_id="g", member_id="m", member_epoch=3)
    payload = _payload(1, "c", request)
    header_tags = struct.calcsize(">hhih") + 1
    for tagged in (_with_tag(payload, header_tags), _with_tag(payload, len(payload) - 1)):
        assert heartbeat_codec.decode_request(tagged) is None  # left to the generic codec
        decoded = codec.decode_request(tagged)
        assert (decoded.correlation_id, decoded.client_id) == (41, "c")
        assert codec.generic(decoded.body) == codec.generic(codec.decode_request(payload).body)


def test_a_null_group_id_is_left_to_the_generic_codec() -> None:
    payload = _payload(0, "c", codec.new_request(68, 0, group_id="g", member_id="m", member_epoch=0))
    at = struct.calcsize(">hhih") + 1 + 1
    null_group = payload[: at] + b"\x00" + payload[at + 2 :]  # "g" was 0x02 'g'
    assert heartbeat_codec.decode_request(null_group) is None
    assert outcome(codec.decode_request, null_group) == outcome(codec.decode_request_generic, null_group)


@st.composite
def responses(draw: st.DrawFn) -> HeartbeatResponse:
    topics = draw(st.none() | TOPICS)
    return HeartbeatResponse(
        draw(st.sampled_from(heartbeat_codec.VERSIONS)), draw(INT32), draw(ERROR_CODES),
        draw(NULLABLE_TEXT), draw(NULLABLE_TEXT), draw(INT32), draw(INT32),
        None if topics is None else Assignment(topics),
    )


@given(responses(), st.integers(-(2**31), 2**31 - 1))
@settings(max_examples=300, deadline=None)
def test_the_fast_path_encodes_any_response_as_the_generic_codec_and_kio_do(
    response: HeartbeatResponse, correlation_id: int
) -> None:
    fast = codec.encode_response(response, correlation_id)
    generic = codec.generic(response)
    assert fast == codec.encode_response(generic, correlation_id)
    body = fast[4 + 5 :]  # size, correlation id, header tags
    kio_type = kio_oracle.message_type(68, response.version, "response")
    entity, _ = kio_oracle.decode(kio_type, body)
    assert kio_oracle.encode(entity) == body
    assert codec.decode_response(68, response.version, fast[4:]) == generic


def _fields(schema: str) -> list[tuple[Any, ...]]:
    def walk(fields: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for f in fields:
            out.append((f["name"], f["type"], f["versions"], f.get("nullableVersions"), f.get("taggedVersions")))
            out += walk(f.get("fields", []))
        return out

    data = json.loads((SCHEMAS / schema).read_text())
    assert (data["validVersions"], data["flexibleVersions"]) == ("0-1", "0+")
    return walk(data["fields"])


@pytest.mark.parametrize("schema, expected", [
    ("ConsumerGroupHeartbeatRequest.json", [
        ("GroupId", "string", "0+", None, None), ("MemberId", "string", "0+", None, None),
        ("MemberEpoch", "int32", "0+", None, None), ("InstanceId", "string", "0+", "0+", None),
        ("RackId", "string", "0+", "0+", None), ("RebalanceTimeoutMs", "int32", "0+", None, None),
        ("SubscribedTopicNames", "[]string", "0+", "0+", None), ("SubscribedTopicRegex", "string", "1+", "1+", None),
        ("ServerAssignor", "string", "0+", "0+", None), ("TopicPartitions", "[]TopicPartitions", "0+", "0+", None),
        ("TopicId", "uuid", "0+", None, None), ("Partitions", "[]int32", "0+", None, None)]),
    ("ConsumerGroupHeartbeatResponse.json", [
        ("ThrottleTimeMs", "int32", "0+", None, None), ("ErrorCode", "int16", "0+", None, None),
        ("ErrorMessage", "string", "0+", "0+", None), ("MemberId", "string", "0+", "0+", None),
        ("MemberEpoch", "int32", "0+", None, None), ("HeartbeatIntervalMs", "int32", "0+", None, None),
        ("Assignment", "Assignment", "0+", "0+", None), ("TopicPartitions", "[]TopicPartitions", "0+", None, None),
        ("TopicId", "uuid", "0+", None, None), ("Partitions", "[]int32", "0+", None, None)]),
])
def test_the_schema_is_the_one_the_fast_path_was_written_for(schema: str, expected: list[tuple[Any, ...]]) -> None:
    assert _fields(schema) == expected


def test_an_owned_partition_list_decodes_to_uuids_and_ints() -> None:
    topic = uuid.uuid4()
    owned = [codec.request_type(68).TopicPartitions(topic_id=topic, partitions=[0, 7])]
    payload = _payload(1, None, codec.new_request(68, 1, group_id="g", member_id="m", member_epoch=2,
                                                  topic_partitions=owned))
    decoded = codec.decode_request(payload)
    assert decoded.client_id == ""
    assert decoded.body.topic_partitions == [TopicPartitions(topic, [0, 7])]
