"""The shell's answers (coordinator/server.py): which are encoded off the loop, and ApiVersions encoded once."""

from __future__ import annotations

import struct
import uuid
from types import SimpleNamespace
from typing import Any

from rebalance_lab.coordinator.answer_sizes import is_large as _large
from rebalance_lab.coordinator.server import ApiVersionsAnswers
from rebalance_lab.protocol import codec


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
