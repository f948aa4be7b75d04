"""ConsumerGroupDescribe and the checks other APIs ask of a consumer group (spec §1.4, §8; 4.4.0, KIP-1251)."""

from __future__ import annotations

import pytest

from rebalance_lab.coordinator.consumer.messages import DescribeInput, DescribeResult
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

from .context import FOO, Ctx, foo

E = ErrorCode


def describe(ctx: Ctx, *group_ids: str) -> DescribeResult:
    result = ctx.coordinator.describe(DescribeInput(group_ids), ctx.topics, "d").reply_to("d")
    assert isinstance(result, DescribeResult)
    return result


def revoking(ctx: Ctx) -> None:
    """A at epoch 2 revoking foo[3-5] toward epoch 3; B at epoch 3 waiting for them."""
    ctx.join("A", client_id="ca", client_host="/10.0.0.1")
    ctx.advance(1_000)
    ctx.join("B", rack_id="r1")
    ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5), client_id="ca2", client_host="/10.0.0.2")


def test_describe_shows_epochs_members_and_both_assignments() -> None:
    ctx = Ctx()
    revoking(ctx)
    (group,) = describe(ctx, "g").groups
    assert (group.error, group.state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        E.NONE, "Reconciling", 3, 3, "uniform")
    a, b = group.members
    # every heartbeat overwrites the client id and host (the member record follows the request context)
    assert (a.member_id, a.member_epoch, a.client_id, a.client_host, a.member_type) == ("A", 2, "ca2", "/10.0.0.2", 1)
    assert [(t.name, t.partitions) for t in a.assignment] == [("foo", (0, 1, 2, 3, 4, 5))]  # + pending revocation
    assert [(t.name, t.partitions) for t in a.target_assignment] == [("foo", (0, 1, 2))]
    assert (b.rack_id, b.subscribed_topic_names, b.subscribed_topic_regex) == ("r1", ("foo",), "")
    assert [(t.name, t.partitions) for t in b.target_assignment] == [("foo", (3, 4, 5))]


def test_describe_answers_unknown_and_classic_groups_with_messages() -> None:
    ctx = Ctx(classic={"c": "non-empty"})
    missing, classic = describe(ctx, "nope", "c").groups
    assert (missing.error, missing.error_message) == (E.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert (classic.error, classic.error_message) == (E.GROUP_ID_NOT_FOUND, "Group c is not a consumer group.")


def test_list_and_delete_follow_the_group_state() -> None:
    ctx = Ctx()
    ctx.join("A")
    assert ctx.coordinator.list_entries() == [("g", "Stable", "consumer")]
    assert ctx.coordinator.delete_group(ctx.now, "g")[0] == E.NON_EMPTY_GROUP
    ctx.leave("A")
    code, fx = ctx.coordinator.delete_group(ctx.now, "g")
    assert code == E.NONE and [type(r).__name__ for r in fx.records] == ["GroupDeleted"]
    assert not ctx.coordinator.has_group("g")
    assert ctx.coordinator.delete_group(ctx.now, "g")[0] == E.GROUP_ID_NOT_FOUND


def test_a_commit_at_the_member_epoch_is_accepted_and_a_newer_one_is_stale() -> None:
    ctx = Ctx()
    revoking(ctx)
    assert ctx.coordinator.validate_offset_commit("g", "A", 2, 9) is None
    with pytest.raises(KafkaError) as stale:
        ctx.coordinator.validate_offset_commit("g", "A", 3, 9)
    assert (stale.value.code, str(stale.value)) == (E.STALE_MEMBER_EPOCH,
                                                   "Received member epoch 3 is newer than current member epoch 2.")


def test_an_older_commit_epoch_is_checked_per_partition_against_assignment_epochs() -> None:
    """KIP-1251 in 4.4.0: B got foo[3-5] at epoch 4 (after A's release); a commit at 3 may cover only what B held
    at 3."""
    ctx = Ctx()
    revoking(ctx)
    ctx.ack("A", 2, foo(0, 1, 2))
    ctx.hb("B", 3)
    ctx.advance(1_000)
    ctx.join("C")  # epoch 4: B keeps foo[3,4], loses 5; A keeps 0,1 ...
    ctx.hb("B", 3, topic_partitions=ctx.owned(foo(3, 4, 5)))
    member_b = ctx.member("B")
    assert member_b.member_epoch == 3  # revoking toward 4
    check = ctx.coordinator.validate_offset_commit("g", "B", 3, 9)
    assert check is None
    check = ctx.coordinator.validate_offset_commit("g", "B", 2, 9)
    assert check is not None
    with pytest.raises(KafkaError) as older:
        check("foo", FOO.topic_id, 3)
    assert str(older.value) == "Received member epoch 2 is older than assignment epoch 3 for partition foo-3."
    with pytest.raises(KafkaError) as other:
        check("foo", FOO.topic_id, 0)
    assert str(other.value) == "Partition foo-0 is not assigned or pending revocation for member."


def test_commit_checks_unknown_members_and_old_versions() -> None:
    ctx = Ctx()
    ctx.join("A")
    with pytest.raises(KafkaError) as unknown:
        ctx.coordinator.validate_offset_commit("g", "Z", 2, 9)
    assert unknown.value.code == E.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaError) as old:
        ctx.coordinator.validate_offset_commit("g", "A", 2, 8)
    assert (old.value.code, str(old.value)) == (
        E.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members using the consumer group "
                               "protocol")
    ctx.leave("A")
    assert ctx.coordinator.validate_offset_commit("g", "", -1, 9) is None  # admin commit on an empty group


def test_fetch_checks_the_epoch_strictly() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.coordinator.validate_offset_fetch("g", "A", 2)
    ctx.coordinator.validate_offset_fetch("g", None, -1)
    for member, epoch, code in (("A", 1, E.STALE_MEMBER_EPOCH), ("Z", 2, E.UNKNOWN_MEMBER_ID),
                                (None, 2, E.UNKNOWN_SERVER_ERROR)):
        with pytest.raises(KafkaError) as err:
            ctx.coordinator.validate_offset_fetch("g", member, epoch)
        assert err.value.code == code


def test_a_group_is_subscribed_to_names_and_regex_topics() -> None:
    ctx = Ctx()
    ctx.join("A", ["foo"])
    assert ctx.coordinator.is_subscribed_to("g", "foo")
    assert not ctx.coordinator.is_subscribed_to("g", "bar")
