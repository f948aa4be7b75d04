"""The classic JoinGroup/SyncGroup fast path agrees with the generic codec, byte for byte.

Random requests of every version (empty and non-ASCII strings, nulls where the schema allows them, metadata and
assignments of any size, long enough for multi-byte compact lengths) are encoded by the generic (schema) codec,
which ``test_codec_vs_kafka_python.py`` checks against kafka-python's, and read by the fast path; random answers
are written by the fast path and must equal the generic encoding. Damaged or unusual input (tagged fields, a null
where the schema has none, trailing bytes, a request over the size limit) is left to the generic codec, so the
verdict on it is the generic one.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.protocol import classic_group_codec, codec
from rebalance_lab.protocol.classic_group_codec import (
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.unit.protocol.fast_path_checks import assert_the_generic_verdict, damaged, outcome, payload

SCHEMAS = Path(codec.__file__).parent / "schemas" / "kafka_messages.json"
INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
TEXT = st.text(max_size=70)  # past 63 characters a compact length may need two varint bytes
BLOB = st.binary(max_size=300)
JOIN, SYNC = classic_group_codec.JOIN_KEY, classic_group_codec.SYNC_KEY


def _maybe(version: int, since: int, value: Any) -> dict[str, Any]:
    return {} if version < since else value


@st.composite
def join_requests(draw: st.DrawFn) -> Any:
    version = draw(st.sampled_from(classic_group_codec.JOIN_VERSIONS))
    protocol = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    fields: dict[str, Any] = dict(
        group_id=draw(TEXT), session_timeout_ms=draw(INT32), member_id=draw(TEXT), protocol_type=draw(TEXT),
        protocols=[protocol(name=draw(TEXT), metadata=draw(BLOB)) for _ in range(draw(st.integers(0, 3)))],
        **_maybe(version, 1, {"rebalance_timeout_ms": draw(INT32)}),
        **_maybe(version, 5, {"group_instance_id": draw(st.none() | TEXT)}),
        **_maybe(version, 8, {"reason": draw(st.none() | TEXT)}))
    return codec.new_request(JOIN, version, **fields)


@st.composite
def sync_requests(draw: st.DrawFn) -> Any:
    version = draw(st.sampled_from(classic_group_codec.SYNC_VERSIONS))
    assignment = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
    fields: dict[str, Any] = dict(
        group_id=draw(TEXT), generation_id=draw(INT32), member_id=draw(TEXT),
        assignments=[assignment(member_id=draw(TEXT), assignment=draw(BLOB)) for _ in range(draw(st.integers(0, 3)))],
        **_maybe(version, 3, {"group_instance_id": draw(st.none() | TEXT)}),
        **_maybe(version, 5, {"protocol_type": draw(st.none() | TEXT), "protocol_name": draw(st.none() | TEXT)}))
    return codec.new_request(SYNC, version, **fields)


REQUESTS = join_requests() | sync_requests()


@given(REQUESTS, st.none() | TEXT)
@settings(max_examples=300, deadline=None)
def test_the_fast_path_decodes_any_request_as_the_generic_codec_does(request: Any, client_id: str | None) -> None:
    data = payload(request, client_id)
    fast = codec.decode_request_fast(data)
    generic = codec.decode_request_generic(data)
    assert fast is not None  # every well-formed request of these versions is read by the fast path
    assert isinstance(fast.body, JoinGroupRequest | SyncGroupRequest)
    assert (fast.api_key, fast.api_version, fast.correlation_id, fast.client_id) == \
        (generic.api_key, generic.api_version, generic.correlation_id, generic.client_id)
    assert codec.generic(fast.body) == generic.body
    assert codec.encode_body(fast.body, fast.api_version) == codec.encode_body(request, fast.api_version)


@given(REQUESTS, st.data())
@settings(max_examples=300, deadline=None)
def test_damaged_requests_get_the_generic_codecs_verdict(request: Any, data: st.DataObject) -> None:
    assert_the_generic_verdict(damaged(payload(request, "c"), data))


def _join(version: int) -> Any:
    protocol = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    return codec.new_request(JOIN, version, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=20_000,
                             member_id="m", group_instance_id=None, protocol_type="consumer", reason=None,
                             protocols=[protocol(name="range", metadata=b"\x00\x01")])


def test_tagged_fields_in_a_flexible_header_or_body_are_left_to_the_generic_codec() -> None:
    data = payload(_join(9), "c")
    header_tags = struct.calcsize(">hhih") + 1
    for at in (header_tags, len(data) - 1):
        assert data[at] == 0
        tagged = data[:at] + b"\x01\x07\x03abc" + data[at + 1:]  # one unknown tag (7) of 3 bytes
        assert classic_group_codec.decode_join_request(tagged) is None
        decoded = codec.decode_request(tagged)
        assert (decoded.correlation_id, decoded.client_id, decoded.body.member_id) == (41, "c", "m")


@pytest.mark.parametrize("version", [0, 5])
def test_a_null_group_id_gets_the_generic_codecs_verdict(version: int) -> None:
    data = payload(_join(version), "c")
    at = struct.calcsize(">hhih") + 1
    null_group = data[:at] + b"\xff\xff" + data[at + 3:]  # "g" was 00 01 'g'
    assert classic_group_codec.decode_join_request(null_group) is None
    assert outcome(codec.decode_request, null_group) == outcome(codec.decode_request_generic, null_group)
    assert outcome(codec.decode_request, null_group) == "MalformedRequest"


def test_a_request_over_the_size_limit_is_left_to_the_generic_codec() -> None:
    assignment = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
    big = codec.new_request(SYNC, 3, group_id="g", generation_id=1, member_id="m", group_instance_id=None,
                            assignments=[assignment(member_id=f"m{i}", assignment=b"x" * 100) for i in range(700)])
    data = payload(big, "c")
    assert len(data) > classic_group_codec.MAX_FAST_BYTES
    assert codec.decode_request_fast(data) is None
    assert len(codec.decode_request(data).body.assignments) == 700


@st.composite
def join_responses(draw: st.DrawFn) -> JoinGroupResponse:
    version = draw(st.sampled_from(classic_group_codec.JOIN_VERSIONS))
    member = codec.data_class(codec.response_type(JOIN), "JoinGroupResponseMember")
    members = [member(member_id=draw(TEXT), group_instance_id=draw(st.none() | TEXT) if version >= 5 else None,
                      metadata=draw(BLOB)) for _ in range(draw(st.integers(0, 3)))]
    return JoinGroupResponse(
        version, draw(INT32) if version >= 2 else 0, draw(INT16), draw(INT32),
        draw(st.none() | TEXT) if version >= 7 else None, draw(st.none() | TEXT) if version >= 7 else draw(TEXT),
        draw(TEXT), draw(st.booleans()) if version >= 9 else False, draw(TEXT), members)


@st.composite
def sync_responses(draw: st.DrawFn) -> SyncGroupResponse:
    version = draw(st.sampled_from(classic_group_codec.SYNC_VERSIONS))
    return SyncGroupResponse(version, draw(INT32) if version >= 1 else 0, draw(INT16),
                             draw(st.none() | TEXT) if version >= 5 else None,
                             draw(st.none() | TEXT) if version >= 5 else None, draw(BLOB))


@given(join_responses() | sync_responses(), INT32)
@settings(max_examples=300, deadline=None)
def test_the_fast_path_encodes_any_answer_as_the_generic_codec_does(response: Any, correlation_id: int) -> None:
    fast = codec.encode_response(response, correlation_id)
    generic = codec.generic(response)
    assert type(generic) is not type(response)
    assert fast == codec.encode_response(generic, correlation_id)
    api_key = JOIN if isinstance(response, JoinGroupResponse) else SYNC
    assert codec.decode_response(api_key, response.version, fast[4:]) == generic


def test_an_answer_the_version_cannot_carry_is_left_to_the_generic_codec() -> None:
    """A null protocol name before v7 (the schema has no null there): the generic codec writes it, as before."""
    response = JoinGroupResponse(5, protocol_name=None, leader="l", member_id="m")
    assert classic_group_codec.encode_join_response(response, 1) is None
    assert codec.encode_response(response, 1) == codec.encode_response(codec.generic(response), 1)


def test_the_schemas_are_the_ones_the_fast_path_was_written_for() -> None:
    schemas = json.loads(SCHEMAS.read_text())

    def shape(name: str) -> list[Any]:
        def fields(entries: list[Any]) -> list[Any]:
            return [(f["name"], f["type"], f["versions"], f.get("nullableVersions"), f.get("taggedVersions"),
                     fields(f.get("fields", []))) for f in entries]
        return [schemas[name]["validVersions"], schemas[name]["flexibleVersions"], fields(schemas[name]["fields"])]

    assert shape("JoinGroupRequest") == ["0-9", "6+", [
        ("GroupId", "string", "0+", None, None, []), ("SessionTimeoutMs", "int32", "0+", None, None, []),
        ("RebalanceTimeoutMs", "int32", "1+", None, None, []), ("MemberId", "string", "0+", None, None, []),
        ("GroupInstanceId", "string", "5+", "5+", None, []), ("ProtocolType", "string", "0+", None, None, []),
        ("Protocols", "[]JoinGroupRequestProtocol", "0+", None, None, [
            ("Name", "string", "0+", None, None, []), ("Metadata", "bytes", "0+", None, None, [])]),
        ("Reason", "string", "8+", "8+", None, [])]]
    assert shape("JoinGroupResponse") == ["0-9", "6+", [
        ("ThrottleTimeMs", "int32", "2+", None, None, []), ("ErrorCode", "int16", "0+", None, None, []),
        ("GenerationId", "int32", "0+", None, None, []), ("ProtocolType", "string", "7+", "7+", None, []),
        ("ProtocolName", "string", "0+", "7+", None, []), ("Leader", "string", "0+", None, None, []),
        ("SkipAssignment", "bool", "9+", None, None, []), ("MemberId", "string", "0+", None, None, []),
        ("Members", "[]JoinGroupResponseMember", "0+", None, None, [
            ("MemberId", "string", "0+", None, None, []), ("GroupInstanceId", "string", "5+", "5+", None, []),
            ("Metadata", "bytes", "0+", None, None, [])])]]
    assert shape("SyncGroupRequest") == ["0-5", "4+", [
        ("GroupId", "string", "0+", None, None, []), ("GenerationId", "int32", "0+", None, None, []),
        ("MemberId", "string", "0+", None, None, []), ("GroupInstanceId", "string", "3+", "3+", None, []),
        ("ProtocolType", "string", "5+", "5+", None, []), ("ProtocolName", "string", "5+", "5+", None, []),
        ("Assignments", "[]SyncGroupRequestAssignment", "0+", None, None, [
            ("MemberId", "string", "0+", None, None, []), ("Assignment", "bytes", "0+", None, None, [])])]]
    assert shape("SyncGroupResponse") == ["0-5", "4+", [
        ("ThrottleTimeMs", "int32", "1+", None, None, []), ("ErrorCode", "int16", "0+", None, None, []),
        ("ProtocolType", "string", "5+", "5+", None, []), ("ProtocolName", "string", "5+", "5+", None, []),
        ("Assignment", "bytes", "0+", None, None, [])]]
