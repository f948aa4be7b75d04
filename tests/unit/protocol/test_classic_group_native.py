"""The C twin of the classic JoinGroup/SyncGroup fast path (protocol/_classic_group.c) makes of every input what the
Python functions of classic_group_codec.py make of it (issue 22).

Well-formed requests of every version, damaged ones (truncated, a byte changed, trailing bytes), any size bound, and
answers of every version: the same result, equal objects of the same classes. Unusual answers (a null where the version
has none, values out of range, other types, a member without a field, a string the UTF-8 codec refuses) get the Python
encoder's own verdict, an error included. ``test_classic_group_codec.py`` checks whichever the codec uses against the
generic codec; in CI that is the C (./dev test builds it; without a build these fail in CI and skip elsewhere).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.protocol import classic_group_codec as fast
from rebalance_lab.protocol.classic_group_codec import (
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupAssignment,
    SyncGroupResponse,
)
from tests.support.compiled_build import require_build
from tests.unit.protocol.fast_path_checks import damaged, payload
from tests.unit.protocol.test_classic_group_codec import REQUESTS, _join, join_responses, sync_responses


@pytest.fixture(scope="module")
def native() -> ModuleType:
    require_build()
    assert fast.NATIVE is not None, "the build has no fresh _classic_group (python -m rebalance_lab.compiled build)"
    return fast.NATIVE


def _outcome(function: Callable[..., Any], *args: Any) -> Any:
    """The result with the classes of the objects in it (dataclass equality alone ignores a list against a tuple), or
    the type and text of the error raised."""
    try:
        result = function(*args)
    except Exception as exc:
        return "raised", type(exc).__name__, str(exc)
    if result is None or isinstance(result, bytes):
        return result
    correlation_id, client_id, body = result
    entries = body.protocols if isinstance(body, JoinGroupRequest) else body.assignments
    return (correlation_id, client_id, body, type(body), type(entries), [type(e) for e in entries],
            [type(getattr(e, "metadata", getattr(e, "assignment", None))) for e in entries])


def _decoders(native: ModuleType, data: bytes) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The C and the Python decoder of the API ``data`` names (the sync ones for any other)."""
    if data[:2] == struct.pack(">h", fast.JOIN_KEY):
        return native.decode_join_request, fast.decode_join_request_py
    return native.decode_sync_request, fast.decode_sync_request_py


def test_the_codec_uses_the_c_functions_when_built(native: ModuleType) -> None:
    assert fast.decode_join_request is native.decode_join_request
    assert fast.decode_sync_request is native.decode_sync_request
    assert fast.encode_join_response is native.encode_join_response
    assert fast.encode_sync_response is native.encode_sync_response


@given(REQUESTS, st.none() | st.text(max_size=20), st.data())
@settings(max_examples=400, deadline=None)
def test_any_request_whole_or_damaged_is_read_as_the_python_reads_it(native: ModuleType, request: Any,
                                                                      client_id: str | None,
                                                                      data: st.DataObject) -> None:
    whole = payload(request, client_id)
    for candidate in (whole, damaged(whole, data), damaged(whole, data)):
        c, python = _decoders(native, candidate)
        assert _outcome(c, candidate) == _outcome(python, candidate)
    c, python = _decoders(native, whole)
    assert _outcome(c, whole)[0] is not None  # a well-formed one is read by the C itself
    for bound in (None, len(whole), len(whole) - 1, 0, -1):
        assert _outcome(c, whole, bound) == _outcome(python, whole, bound)


@given(st.binary(max_size=80), st.sampled_from([fast.JOIN_KEY, fast.SYNC_KEY]), st.integers(-1, 10))
@settings(max_examples=300, deadline=None)
def test_random_bytes_after_a_plausible_header_get_the_python_verdict(native: ModuleType, body: bytes, key: int,
                                                                       version: int) -> None:
    data = struct.pack(">hhih", key, version, 7, 1) + b"c" + body
    for c, python in ((native.decode_join_request, fast.decode_join_request_py),
                      (native.decode_sync_request, fast.decode_sync_request_py)):
        assert _outcome(c, data) == _outcome(python, data)


def test_a_request_not_in_bytes_or_with_an_odd_bound_is_the_python_paths(native: ModuleType) -> None:
    whole = payload(_join(7), "c")
    for args in ((bytearray(whole),), (memoryview(whole),), (whole, 10.0**9), (whole, True), (whole, None),
                 (whole, 2**70), ("text",), (None,)):
        assert _outcome(native.decode_join_request, *args) == _outcome(fast.decode_join_request_py, *args)
    decoded = native.decode_join_request(bytearray(whole))
    assert type(decoded[2].protocols[0].metadata) is bytearray  # as the Python's slices of a bytearray


@given(join_responses() | sync_responses(), st.integers(-(2**31), 2**31 - 1))
@settings(max_examples=400, deadline=None)
def test_any_answer_is_written_as_the_python_writes_it(native: ModuleType, response: Any, correlation_id: int) -> None:
    c, python = _encoders(native, response)
    written = c(response, correlation_id)
    assert written is not None and written == python(response, correlation_id)


def _encoders(native: ModuleType, response: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    if isinstance(response, JoinGroupResponse):
        return native.encode_join_response, fast.encode_join_response_py
    return native.encode_sync_response, fast.encode_sync_response_py


class _Member:
    def __init__(self, member_id: Any = "m", group_instance_id: Any = None, metadata: Any = b"x") -> None:
        self.member_id, self.group_instance_id, self.metadata = member_id, group_instance_id, metadata


class _Text(str):
    pass


class _NoMetadata:
    member_id, group_instance_id = "m", None


ODD_JOINS: list[Callable[[int], Any]] = [
    lambda v: JoinGroupResponse(v, protocol_name=None, leader="l", member_id="m"),
    lambda v: JoinGroupResponse(v, protocol_type=3, protocol_name="p", leader="l", member_id="m"),
    lambda v: JoinGroupResponse(v, protocol_name="p", leader=None, member_id="m"),
    lambda v: JoinGroupResponse(v, protocol_name="p", leader="l" * 40_000, member_id="m"),
    lambda v: JoinGroupResponse(v, protocol_name="p", leader="\ud800", member_id="m"),
    lambda v: JoinGroupResponse(v, protocol_name=_Text("p"), leader="l", member_id="m"),
    lambda v: JoinGroupResponse(v, error_code=40_000, protocol_name="p"),
    lambda v: JoinGroupResponse(v, error_code=True, protocol_name="p"),
    lambda v: JoinGroupResponse(v, throttle_time_ms=2**31, protocol_name="p"),
    lambda v: JoinGroupResponse(v, generation_id=-(2**31) - 1, protocol_name="p"),
    lambda v: JoinGroupResponse(v, generation_id=1.0, protocol_name="p"),  # type: ignore[arg-type]
    lambda v: JoinGroupResponse(v, protocol_name="p", skip_assignment=[]),  # type: ignore[arg-type]
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(metadata=bytearray(b"ab"))]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(metadata=memoryview(b"ab"))]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(metadata="ab")]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(member_id=None)]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(group_instance_id="i")]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_NoMetadata()]),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=(m for m in [_Member()])),  # type: ignore[arg-type]
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member()] * 3),
    lambda v: JoinGroupResponse(v, protocol_name="p", members=[_Member(member_id="é" * 20_000)]),
    lambda v: JoinGroupResponse(-1, protocol_name="p"),
    lambda v: JoinGroupResponse(v + 20, protocol_name="p"),
    lambda v: JoinGroupResponse(None, protocol_name="p"),  # type: ignore[arg-type]
    lambda v: "not an answer",
]

ODD_SYNCS: list[Callable[[int], Any]] = [
    lambda v: SyncGroupResponse(v, protocol_type=None, protocol_name=3),  # type: ignore[arg-type]
    lambda v: SyncGroupResponse(v, assignment=bytearray(b"ab")),  # type: ignore[arg-type]
    lambda v: SyncGroupResponse(v, assignment=None),  # type: ignore[arg-type]
    lambda v: SyncGroupResponse(v, error_code=-40_000),
    lambda v: SyncGroupResponse(v, throttle_time_ms=True),
    lambda v: SyncGroupResponse(v, protocol_type="\udfff"),
    lambda v: SyncGroupResponse(v + 20, protocol_type="t", protocol_name="n", assignment=b"a"),
    lambda v: SyncGroupResponse(-3, assignment=b"a"),
    lambda v: "not an answer",
]


@pytest.mark.parametrize("make", ODD_JOINS)
@pytest.mark.parametrize("version", fast.JOIN_VERSIONS)
def test_an_unusual_join_answer_gets_the_python_verdict(native: ModuleType, make: Callable[[int], Any],
                                                        version: int) -> None:
    for correlation_id in (5, 2**31, "5"):
        assert _outcome(native.encode_join_response, make(version), correlation_id) == \
            _outcome(fast.encode_join_response_py, make(version), correlation_id)


@pytest.mark.parametrize("make", ODD_SYNCS)
@pytest.mark.parametrize("version", fast.SYNC_VERSIONS)
def test_an_unusual_sync_answer_gets_the_python_verdict(native: ModuleType, make: Callable[[int], Any],
                                                        version: int) -> None:
    for correlation_id in (5, -(2**31) - 1):
        assert _outcome(native.encode_sync_response, make(version), correlation_id) == \
            _outcome(fast.encode_sync_response_py, make(version), correlation_id)


def test_a_leaders_answer_of_thousands_of_members_is_the_pythons(native: ModuleType) -> None:
    members = tuple(_Member(f"member-{i}", None if i % 2 else f"instance-{i}", bytes(range(i % 200)))
                    for i in range(5_000))
    for version in fast.JOIN_VERSIONS:
        response = JoinGroupResponse(version, 0, 0, 7, "consumer", "range", "member-0", False, "member-0", members)
        assert native.encode_join_response(response, 9) == fast.encode_join_response_py(response, 9)


def test_the_bodies_are_the_codecs_classes(native: ModuleType) -> None:
    _, _, body = native.decode_join_request(payload(_join(9), "c"))
    assert type(body.protocols[0]) is JoinGroupProtocol
    assert body.protocols_key is not None and body.reason is None
    _, _, sync = native.decode_sync_request(payload(_sync(), "c"))
    assert type(sync.assignments[0]) is SyncGroupAssignment


def _sync() -> Any:
    from rebalance_lab.protocol import codec

    assignment = codec.data_class(codec.request_type(fast.SYNC_KEY), "SyncGroupRequestAssignment")
    return codec.new_request(fast.SYNC_KEY, 5, group_id="g", generation_id=1, member_id="m", group_instance_id=None,
                             protocol_type="consumer", protocol_name="range",
                             assignments=[assignment(member_id="m", assignment=b"a")])
