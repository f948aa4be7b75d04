"""The runtime codec (our own, from Kafka 4.4.0's schemas) against kafka-python's generated codec, the oracle.

For every API and version the emulator serves, kio builds a fully populated request and response (every field
a distinctive value: a dropped or misplaced field changes the bytes). Both directions are checked against
kafka-python 3.0.x, whose codec was the runtime codec until issue 21:

* reading: the framed request the server decodes and the body of each response read into the same values;
* writing: the framed request and response each codec writes from what it read are the same bytes;
* defaults: a response made with no fields (what ``errors_response`` builds) writes the same bytes.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.protocol import codec
from tests.unit.protocol import kafka_python_codec as oracle
from tests.unit.protocol import kio_oracle


def _served() -> list[tuple[int, int]]:
    cases = []
    for key in sorted(load_handlers()):
        low, high = codec.codec_version_range(key) or (0, -1)
        cases += [(key, v) for v in range(low, high + 1)]
    return cases


CASES = _served()


def _ids(case: tuple[int, int]) -> str:
    return f"{codec.API_NAMES[case[0]]}-v{case[1]}"


def _framed_request(api_key: int, version: int) -> bytes:
    body = kio_oracle.encode(kio_oracle.populate_case(kio_oracle.message_type(api_key, version, "request")))
    header = struct.pack(">hhih", api_key, version, 77, 3) + b"kio" + (b"\x00" if codec.is_flexible(api_key,
                                                                                                   version) else b"")
    return header + body


def _plain(value: Any) -> Any:
    """kafka-python's and our objects as nested dicts of raw values (bytes as bytes, memoryviews too)."""
    if hasattr(value, "to_dict"):
        return {k: _plain(getattr(value, k)) for k in value.to_dict(json=False)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_request_reads_as_kafka_python_reads_it_and_writes_the_same_bytes(case: tuple[int, int]) -> None:
    api_key, version = case
    payload = _framed_request(api_key, version)
    ours, theirs = codec.decode_request_generic(payload), oracle.decode_request_generic(payload)
    assert (ours.api_key, ours.api_version, ours.correlation_id, ours.client_id) == (
        theirs.api_key, theirs.api_version, theirs.correlation_id, theirs.client_id)
    assert _plain(ours.body) == _plain(theirs.body)
    assert codec.encode_request(ours.body, 5, "c") == oracle.encode_request(theirs.body, 5, "c")


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_response_reads_as_kafka_python_reads_it_and_frames_to_the_same_bytes(case: tuple[int, int]) -> None:
    api_key, version = case
    body = kio_oracle.encode(kio_oracle.populate_case(kio_oracle.message_type(api_key, version, "response")))
    ours = codec.decode_body(codec.response_type(api_key), version, body)
    theirs = oracle.decode_body(oracle.response_type(api_key), version, body)
    assert _plain(ours) == _plain(theirs)
    framed = codec.encode_response(ours, 99)
    assert framed == oracle.encode_response(theirs, 99)
    assert _plain(codec.decode_response(api_key, version, framed[4:])) == _plain(theirs)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_response_made_with_no_fields_writes_what_kafka_python_writes(case: tuple[int, int]) -> None:
    api_key, version = case
    ours = codec.encode_response(codec.new_response(api_key, version), 3)
    try:
        theirs = oracle.encode_response(oracle.new_response(api_key, version), 3)
    except NotImplementedError:  # kafka-python has no default for a non-null struct (Kafka's is an empty one):
        read_back = codec.decode_response(api_key, version, ours[4:])  # ours must at least read back as made
        assert _plain(read_back) == _plain(codec.new_response(api_key, version))
        return
    assert ours == theirs


def _kafka_python_fields(fields: Any, path: str, out: dict[str, set[str]]) -> None:
    for name, field in fields.items():
        out.setdefault(path, set()).add(name)
        if field.is_struct() or field.is_struct_array():
            nested = field.fields if isinstance(field.fields, dict) else {f.name: f for f in field.fields}
            _kafka_python_fields(nested, f"{path}/{name}", out)


def _our_fields(spec: Any, path: str, out: dict[str, set[str]]) -> None:
    for field in spec.fields:
        out.setdefault(path, set()).add(field.name)
        if field.struct is not None:
            _our_fields(field.struct, f"{path}/{field.name}", out)


@pytest.mark.parametrize("api_key", sorted(load_handlers()), ids=lambda key: codec.API_NAMES[key])
def test_every_field_kafka_python_accepts_ours_accepts_too(api_key: int) -> None:
    """Handlers and tests were written against kafka-python's classes: every field name they may pass exists."""
    for ours, theirs in ((codec.request_type(api_key), oracle.request_type(api_key)),
                         (codec.response_type(api_key), oracle.response_type(api_key))):
        mine: dict[str, set[str]] = {}
        kafka_python: dict[str, set[str]] = {}
        _our_fields(ours._spec, "", mine)
        _kafka_python_fields(theirs._struct.fields, "", kafka_python)
        assert {path: sorted(names - mine.get(path, set())) for path, names in kafka_python.items()
                if names - mine.get(path, set())} == {}


def test_every_served_api_and_version_is_checked_and_kafka_python_knows_the_same_versions() -> None:
    assert {key for key, _ in CASES} == set(load_handlers())
    for key in load_handlers():
        assert codec.codec_version_range(key) == oracle.codec_version_range(key), codec.API_NAMES[key]
    assert codec.API_NAMES == oracle.API_NAMES
