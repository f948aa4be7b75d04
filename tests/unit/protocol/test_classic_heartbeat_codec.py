"""The classic Heartbeat fast path agrees with the generic codec, byte for byte.

Random requests of every version (empty and non-ASCII ids, null instance ids and client ids) are encoded by the
generic (schema) codec, which ``test_codec_vs_kafka_python.py`` checks against kafka-python's, and read by the
fast path; random responses are written by the fast path and must equal the generic encoding. Damaged or
unusual input (tagged fields, long compact lengths, a null group id) is left to the generic codec, so the
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

from rebalance_lab.protocol import classic_heartbeat_codec, codec
from rebalance_lab.protocol.classic_heartbeat_codec import HeartbeatRequest, HeartbeatResponse
from tests.unit.protocol.fast_path_checks import assert_the_generic_verdict, damaged, outcome, payload

SCHEMAS = Path(codec.__file__).parent / "schemas" / "kafka_messages.json"
INT32 = st.integers(-(2**31), 2**31 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
TEXT = st.text(max_size=80)  # past 63 characters a v4 compact length may need two varint bytes
VERSIONS = st.sampled_from(classic_heartbeat_codec.VERSIONS)


@st.composite
def requests(draw: st.DrawFn) -> tuple[int, str | None, Any]:
    version = draw(VERSIONS)
    fields: dict[str, Any] = dict(group_id=draw(TEXT), generation_id=draw(INT32), member_id=draw(TEXT))
    if version >= 3:
        fields["group_instance_id"] = draw(st.none() | TEXT)
    return version, draw(st.none() | TEXT), codec.new_request(12, version, **fields)


def _payload(version: int, client_id: str | None, request: Any) -> bytes:
    return payload(request, client_id)


@given(requests())
@settings(max_examples=400, deadline=None)
def test_the_fast_path_decodes_any_request_as_the_generic_codec_does(case: tuple[int, str | None, Any]) -> None:
    version, _client, request = case
    payload = _payload(*case)
    fast = codec.decode_request_fast(payload)
    generic = codec.decode_request_generic(payload)
    if fast is None:  # only a compact length over one varint byte is left to the generic codec
        assert version == 4 and max(len(s.encode()) for s in (request.group_id, request.member_id,
                                                              request.group_instance_id or "")) >= 0x7E
        return
    assert isinstance(fast.body, HeartbeatRequest)
    assert (fast.api_key, fast.api_version, fast.correlation_id, fast.client_id) == \
        (generic.api_key, generic.api_version, generic.correlation_id, generic.client_id)
    assert codec.generic(fast.body) == codec.generic(generic.body)
    assert codec.encode_body(fast.body, version) == codec.encode_body(request, version)


@given(requests(), st.data())
@settings(max_examples=400, deadline=None)
def test_damaged_requests_get_the_generic_codecs_verdict(
    case: tuple[int, str | None, Any], data: st.DataObject
) -> None:
    assert_the_generic_verdict(damaged(_payload(*case), data))


def test_tagged_fields_in_a_v4_header_or_body_are_left_to_the_generic_codec() -> None:
    payload = _payload(4, "c", codec.new_request(12, 4, group_id="g", generation_id=3, member_id="m"))
    header_tags = struct.calcsize(">hhih") + 1
    for at in (header_tags, len(payload) - 1):
        assert payload[at] == 0
        tagged = payload[:at] + b"\x01\x07\x03abc" + payload[at + 1:]  # one unknown tag (7) of 3 bytes
        assert classic_heartbeat_codec.decode_request(tagged) is None
        decoded = codec.decode_request(tagged)
        assert (decoded.correlation_id, decoded.client_id, decoded.body.member_id) == (41, "c", "m")


@pytest.mark.parametrize("version", [0, 3])
def test_a_null_group_id_gets_the_generic_codecs_verdict(version: int) -> None:
    payload = _payload(version, "c", codec.new_request(12, version, group_id="g", generation_id=0, member_id="m"))
    at = struct.calcsize(">hhih") + 1
    null_group = payload[:at] + b"\xff\xff" + payload[at + 3:]  # "g" was 00 01 'g'
    assert classic_heartbeat_codec.decode_request(null_group) is None
    assert outcome(codec.decode_request, null_group) == outcome(codec.decode_request_generic, null_group)


def test_a_consumer_group_heartbeat_is_not_read_as_a_classic_one() -> None:
    payload = _payload(0, "c", codec.new_request(68, 0, group_id="g", member_id="m", member_epoch=0))
    assert classic_heartbeat_codec.decode_request(payload) is None


@given(VERSIONS, INT32, INT16, INT32)
@settings(max_examples=400, deadline=None)
def test_the_fast_path_encodes_any_response_as_the_generic_codec_does(
    version: int, throttle: int, error: int, correlation_id: int
) -> None:
    response = HeartbeatResponse(version, throttle if version >= 1 else 0, error)
    fast = codec.encode_response(response, correlation_id)
    generic = codec.generic(response)
    assert type(generic) is not HeartbeatResponse
    assert fast == codec.encode_response(generic, correlation_id)
    decoded = codec.decode_response(12, version, fast[4:])
    assert (decoded.error_code, decoded.throttle_time_ms if version >= 1 else 0) == (error, response.throttle_time_ms)


def test_the_schema_is_the_one_the_fast_path_was_written_for() -> None:
    schemas = json.loads(SCHEMAS.read_text())
    request, response = schemas["HeartbeatRequest"], schemas["HeartbeatResponse"]
    assert (request["validVersions"], request["flexibleVersions"]) == ("0-4", "4+")
    assert (response["validVersions"], response["flexibleVersions"]) == ("0-4", "4+")
    assert [(f["name"], f["type"], f["versions"], f.get("nullableVersions"), f.get("taggedVersions"))
            for f in request["fields"]] == [
        ("GroupId", "string", "0+", None, None), ("GenerationId", "int32", "0+", None, None),
        ("MemberId", "string", "0+", None, None), ("GroupInstanceId", "string", "3+", "3+", None)]
    assert [(f["name"], f["type"], f["versions"], f.get("taggedVersions")) for f in response["fields"]] == [
        ("ThrottleTimeMs", "int32", "1+", None), ("ErrorCode", "int16", "0+", None)]
