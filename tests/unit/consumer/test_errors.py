"""Error paths of a valid heartbeat (spec/kip848.md §2.1.7-2.1.10, §2.2, §10 #17-19, #21, #23, #25)."""

from __future__ import annotations

import pytest

from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.coordinator.consumer import target
from rebalance_lab.coordinator.consumer.assignors import AssignorError
from rebalance_lab.protocol.errors import ErrorCode

from .context import Ctx

E = ErrorCode


def test_a_heartbeat_to_a_group_that_does_not_exist_is_group_id_not_found() -> None:
    r = Ctx().hb("A", 1)
    assert (r.error, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Consumer group g not found.")


def test_an_unknown_member_is_unknown_member_id() -> None:
    ctx = Ctx()
    ctx.join("A")
    r = ctx.hb("Z", 1)
    assert (r.error, r.error_message) == (E.UNKNOWN_MEMBER_ID, "Member Z is not a member of group g.")


def test_a_greater_epoch_is_fenced() -> None:
    ctx = Ctx()
    ctx.join("A")
    r = ctx.hb("A", 7)
    assert (r.error, r.error_message) == (E.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member "
                                          "epoch (7) than the one known by the group coordinator (2). The member "
                                          "must abandon all its partitions and rejoin.")
    assert ctx.member("A").member_epoch == 2  # fencing an epoch does not remove the member


def test_a_smaller_epoch_without_owned_partitions_is_fenced() -> None:
    ctx = Ctx()
    ctx.hand_over()
    r = ctx.hb("A", 2)
    assert (r.error, r.error_message) == (E.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member "
                                          "epoch (2) than the one known by the group coordinator (3). The member "
                                          "must abandon all its partitions and rejoin.")


def test_a_full_group_refuses_a_new_member() -> None:
    ctx = Ctx(ConsumerGroupConfig(max_size=1))
    ctx.join("A")
    r = ctx.join("B")
    assert (r.error, r.error_message) == (E.GROUP_MAX_SIZE_REACHED,
                                          "The consumer group has reached its maximum capacity of 1 members.")
    assert ctx.hb("A", 2).error == E.NONE


def test_leaving_an_unknown_member_or_group_fails() -> None:
    ctx = Ctx()
    assert (ctx.leave("Z").error, ctx.leave("Z").error_message) == (E.GROUP_ID_NOT_FOUND, "Group g not found.")
    ctx.join("A")
    r = ctx.leave("Z")
    assert (r.error, r.error_message) == (E.UNKNOWN_MEMBER_ID, "Member Z is not a member of group g.")


def test_a_non_empty_classic_group_of_the_same_id_is_not_a_consumer_group() -> None:
    ctx = Ctx(classic={"g": "non-empty"})
    r = ctx.join("A")
    assert (r.error, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")


def test_an_empty_classic_group_is_replaced_by_the_consumer_group() -> None:
    ctx = Ctx(classic={"g": "empty"})
    r = ctx.join("A")
    assert r.error == E.NONE and r.deletes_classic_group


def test_an_assignor_failure_is_unknown_server_error_without_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """``CoordinatorOperationExceptionHelper``: UNKNOWN_SERVER_ERROR answers carry no message. (No input makes
    4.4.0's assignors fail through the heartbeat, so the seam is replaced by one that does.)"""
    def failing(*args: object) -> dict[str, object]:
        raise AssignorError("Partitions were left unassigned")

    monkeypatch.setattr(target, "assign", failing)
    ctx = Ctx()
    r = ctx.join("A")
    assert (r.error, r.error_message) == (E.UNKNOWN_SERVER_ERROR, None)
    assert ctx.coordinator.group("g") is None
