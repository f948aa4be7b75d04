"""Static membership (spec/kip848.md §6, §10 #26-31; 4.4.0)."""

from __future__ import annotations

from rebalance_lab.protocol.errors import ErrorCode

from .context import Ctx, foo, kinds

E = ErrorCode


def static_join(ctx: Ctx, member_id: str, instance: str = "i1") -> None:
    assert ctx.join(member_id, instance_id=instance).error == E.NONE


def test_a_temporary_leave_keeps_the_member_and_its_partitions_without_a_bump() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    r = ctx.leave("A", -2, instance_id="i1")
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (E.NONE, "A", -2, 0, None)
    view = ctx.view()
    assert (view.group_epoch, view.member("A").member_epoch) == (2, -2)  # type: ignore[union-attr]
    assert view.member("A").assigned == {ctx.topics.by_name["foo"].topic_id: tuple(range(6))}  # type: ignore[union-attr]
    assert kinds(ctx.last) == ["MemberLeft", "MemberAssignmentChanged"]


def test_a_new_member_id_takes_over_a_temporarily_left_instance_without_a_bump() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    ctx.leave("A", -2, instance_id="i1")
    r = ctx.join("A2", instance_id="i1")
    assert (r.error, r.member_epoch, ctx.names(r.assignment)) == (E.NONE, 2, foo(0, 1, 2, 3, 4, 5))
    assert [m.member_id for m in ctx.view().members] == ["A2"]
    assert kinds(ctx.last) == ["StaticMemberReplaced", "MemberAssignmentChanged"]  # no bump, no join record


def test_an_instance_id_held_by_an_active_member_is_unreleased() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    r = ctx.join("A2", instance_id="i1")
    assert (r.error, r.error_message) == (E.UNRELEASED_INSTANCE_ID, "Static member A2 with instance id i1 cannot "
                                          "join the group because the instance id is owned by A member.")


def test_a_heartbeat_with_another_members_instance_id_is_fenced() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    r = ctx.hb("A3", 2, instance_id="i1")
    assert (r.error, r.error_message) == (E.FENCED_INSTANCE_ID,
                                          "Static member A3 with instance id i1 was fenced by member A.")


def test_a_heartbeat_with_an_unknown_instance_id_is_unknown_member_id() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    r = ctx.hb("A", 2, instance_id="i9")
    assert (r.error, r.error_message) == (E.UNKNOWN_MEMBER_ID, "Instance id i9 is unknown.")


def test_a_static_member_leaving_for_good_bumps_the_epoch() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    static_join(ctx, "B", "i2")
    r = ctx.leave("A", -1, instance_id="i1")
    assert (r.error, r.member_id, r.member_epoch) == (E.NONE, "A", -1)
    assert ctx.view().group_epoch == 4 and ctx.view().member("A") is None


def test_a_full_group_still_takes_back_a_known_instance() -> None:
    """4.4.0 ``throwIfConsumerGroupIsFull`` skips a request whose instance id the group holds."""
    from rebalance_lab.config import ConsumerGroupConfig

    ctx = Ctx(ConsumerGroupConfig(max_size=1))
    static_join(ctx, "A")
    ctx.leave("A", -2, instance_id="i1")
    assert ctx.join("A2", instance_id="i1").error == E.NONE


def test_a_temporarily_left_member_still_expires_with_its_session() -> None:
    ctx = Ctx()
    static_join(ctx, "A")
    ctx.leave("A", -2, instance_id="i1")
    ctx.advance(45_000)
    assert ctx.view().members == () and ctx.view().state == "Empty"
