"""Request validation in 4.4.0's order, with Kafka's messages (spec/kip848.md §2.1 step 5, §10 #8-16)."""

from __future__ import annotations

import pytest

from rebalance_lab.protocol.errors import ErrorCode

from .context import REBALANCE_TIMEOUT, Ctx

E = ErrorCode
JOIN = {"rebalance_timeout_ms": REBALANCE_TIMEOUT, "subscribed_topic_names": ("foo",), "topic_partitions": ()}


def join_with(**changes: object) -> dict[str, object]:
    return {**JOIN, **changes}


@pytest.mark.parametrize(("member_id", "epoch", "fields", "code", "message"), [
    ("A", 0, join_with(rebalance_timeout_ms=-1), E.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ("A", 0, join_with(topic_partitions=None), E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
    ("A", 0, join_with(subscribed_topic_names=None), E.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ("", 0, JOIN, E.INVALID_REQUEST, "MemberId can't be empty."),
    ("  ", 3, {}, E.INVALID_REQUEST, "MemberId can't be empty."),
    ("A", -3, {}, E.INVALID_REQUEST, "MemberEpoch is invalid."),
    ("A", -2, {}, E.INVALID_REQUEST, "InstanceId can't be null."),
    ("A", 0, join_with(server_assignor="foo"), E.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor foo is not supported. Supported assignors: uniform, range."),
    ("A", 0, join_with(instance_id=" "), E.INVALID_REQUEST, "InstanceId can't be empty."),
    ("A", 0, join_with(rack_id=""), E.INVALID_REQUEST, "RackId can't be empty."),
    ("", 0, join_with(rebalance_timeout_ms=-1), E.INVALID_REQUEST, "MemberId can't be empty."),  # MemberId first
])
def test_an_invalid_request_gets_kafkas_error_and_changes_nothing(member_id: str, epoch: int,
                                                                   fields: dict[str, object], code: ErrorCode,
                                                                   message: str) -> None:
    ctx = Ctx()
    r = ctx.hb(member_id, epoch, **fields)  # type: ignore[arg-type]
    assert (r.error, r.error_message, r.member_id, r.member_epoch, r.assignment) == (code, message, None, 0, None)
    assert ctx.coordinator.group("g") is None and ctx.records == []


def test_topic_partitions_must_be_empty_when_joining() -> None:
    ctx = Ctx()
    r = ctx.hb("A", 0, **join_with(topic_partitions=ctx.owned({"foo": [0]})))  # type: ignore[arg-type]
    assert (r.error, r.error_message) == (E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")


def test_an_empty_group_id_is_invalid() -> None:
    ctx = Ctx()
    r = ctx.hb("A", 0, group="", **JOIN)  # type: ignore[arg-type]
    assert (r.error, r.error_message) == (E.INVALID_REQUEST, "GroupId can't be empty.")


def test_a_v0_join_may_leave_the_member_id_to_the_coordinator() -> None:
    """v0 (KIP-1082 is v1+): the coordinator names the member, ``Uuid.toString`` style (22 chars)."""
    ctx = Ctx()
    r = ctx.hb("", 0, api_version=0, **JOIN)  # type: ignore[arg-type]
    assert r.error == E.NONE and r.member_id is not None and len(r.member_id) == 22
    assert not r.member_id.startswith("-") and ctx.view().members[0].member_id == r.member_id


def test_an_invalid_regex_is_refused_with_re2js_description() -> None:
    ctx = Ctx()
    r = ctx.hb("A", 0, **join_with(subscribed_topic_names=None, subscribed_topic_regex="["))  # type: ignore[arg-type]
    assert (r.error, r.error_message) == (
        E.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ].")
    assert ctx.coordinator.group("g") is None


def test_an_empty_regex_means_no_regex() -> None:
    """librdkafka sends SubscribedTopicRegex "" with its names (helper "clients")."""
    ctx = Ctx()
    r = ctx.hb("A", 0, **join_with(subscribed_topic_regex=""))  # type: ignore[arg-type]
    assert r.error == E.NONE and ctx.names(r.assignment) == {"foo": set(range(6))}
