"""The shell's answers (coordinator/server.py): which are encoded off the loop, and ApiVersions encoded once."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from rebalance_lab.coordinator.answer_sizes import is_large as _large
from rebalance_lab.coordinator.classic.messages import JoinedMember
from rebalance_lab.coordinator.server import ApiVersionsAnswers, _decode_unbounded
from rebalance_lab.protocol import classic_group_codec, codec
from rebalance_lab.protocol.errors import MalformedRequest


def _acl_resources(count: int) -> Any:
    resource = codec.data_class(codec.response_type(29), "DescribeAclsResource")
    description = codec.data_class(resource, "AclDescription")
    return codec.new_response(29, 3, throttle_time_ms=0, error_code=0, error_message="", resources=[
        resource(resource_type=2, resource_name=f"t-{i}", pattern_type=3,
                 acls=[description(principal="User:a", host="*", operation=3, permission_type=3)])
        for i in range(count)])


def _group_with_partitions(count: int) -> Any:
    described = codec.data_class(codec.response_type(69), "DescribedGroup")
    member = codec.data_class(described, "Member")
    shape = codec.data_class(member, "Assignment")
    topic = codec.data_class(shape, "TopicPartitions")
    assignment = shape(topic_partitions=[topic(topic_id=uuid.uuid4(), topic_name="t", partitions=list(range(count)))])
    return codec.new_response(69, 1, throttle_time_ms=0, groups=[described(
        group_id="g", members=[member(member_id="m", assignment=assignment, target_assignment=shape())])])


def test_an_answer_listing_many_entries_at_any_depth_is_large() -> None:
    # before: only lists named topics/responses/results/groups were counted, and encoded on the loop otherwise
    assert _large(_acl_resources(2_001)) and not _large(_acl_resources(500))
    assert _large(_group_with_partitions(3_000)) and not _large(_group_with_partitions(10))


def test_a_leaders_member_list_is_encoded_on_the_loop_up_to_twenty_thousand_members() -> None:
    """The fast JoinGroup encoder writes ~1.3 us a member: the leader's answer of a 10,000-member group leaves first,
    on the loop, instead of after every follower's answer from the codec thread (issue 22; 2,000 before)."""

    def leaders_answer(count: int) -> classic_group_codec.JoinGroupResponse:
        members = tuple(JoinedMember(f"m{i}", None, b"x") for i in range(count))
        return classic_group_codec.JoinGroupResponse(5, members=members)

    assert not _large(leaders_answer(10_000)) and not _large(leaders_answer(20_000))
    assert _large(leaders_answer(20_001))


def _big_sync(version: int, member: str | None = "m") -> bytes:
    assignment = codec.data_class(codec.request_type(14), "SyncGroupRequestAssignment")
    request = codec.new_request(14, version, group_id="g", generation_id=3, member_id="leader", group_instance_id=None,
                                protocol_type="consumer", protocol_name="range",
                                assignments=[assignment(member_id=f"m{i}", assignment=b"x" * 100) for i in range(700)])
    data = bytes(codec.encode_request(request, 9, "c")[4:])
    if member is None:  # the first assignment's member id made null (the schema forbids it)
        at = data.index(b"\x00\x02m0" if version < 4 else b"\x03m0")
        data = data[:at] + (b"\xff\xff" + data[at + 4:] if version < 4 else b"\x00" + data[at + 3:])
    return data


@pytest.mark.parametrize("version", [3, 4, 5])
def test_a_leaders_big_sync_group_is_read_by_the_fast_decoder_as_the_generic_codec_reads_it(version: int) -> None:
    """Over the arrival path's bound (the leader's SyncGroup of thousands): the fast decoder all the same, ~2x
    the schema codec's speed, same fields (issue 22)."""
    data = _big_sync(version)
    assert len(data) > classic_group_codec.MAX_FAST_BYTES
    fast, generic = _decode_unbounded(data), codec.decode_request_generic(data)
    assert isinstance(fast.body, classic_group_codec.SyncGroupRequest)
    assert (fast.api_key, fast.api_version, fast.correlation_id, fast.client_id) == (14, version, 9, "c")
    assert [(a.member_id, a.assignment) for a in fast.body.assignments] == \
        [(a.member_id, a.assignment) for a in generic.body.assignments]
    assert (fast.body.group_id, fast.body.generation_id, fast.body.member_id) == ("g", 3, "leader")


@pytest.mark.parametrize("version", [3, 4])
def test_a_damaged_big_sync_group_gets_the_generic_codecs_verdict(version: int) -> None:
    data = _big_sync(version, member=None)
    with pytest.raises(MalformedRequest):
        codec.decode_request_generic(data)
    with pytest.raises(MalformedRequest):
        _decode_unbounded(data)


def test_api_versions_is_encoded_once_per_version_and_carries_each_requests_correlation_id() -> None:
    built: list[int] = []
    versions = object()

    def build() -> Any:
        built.append(1)
        return codec.new_response(18, 3, error_code=0, api_keys=[], throttle_time_ms=0)

    answers = ApiVersionsAnswers()
    ctx = SimpleNamespace(api_version=3, correlation_id=7, world=SimpleNamespace(versions=versions))
    first = answers.answer(ctx, build)  # type: ignore[arg-type]
    ctx.correlation_id = 8
    second = answers.answer(ctx, build)  # type: ignore[arg-type]
    assert built == [1]
    assert first == codec.encode_response(build(), 7)
    assert second == first[:4] + struct.pack(">i", 8) + first[8:]
    ctx.world = SimpleNamespace(versions=object())  # another table: built again
    answers.answer(ctx, build)  # type: ignore[arg-type]
    assert len(built) == 3
