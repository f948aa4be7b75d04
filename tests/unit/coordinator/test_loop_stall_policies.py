"""What keeps one big request or a big world from holding the loop (issue 17, Fairness): the collector policy
(connection.FreezeOnGrowth), the classic coordinator's listing read as it is reached, and big answers framed a
run of parts at a time. benchmarks/loop_stalls.py measures the stalls; these show the mechanisms."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from rebalance_lab.coordinator import connection
from rebalance_lab.coordinator.classic.admin_messages import ListGroupsInput
from rebalance_lab.coordinator.connection import FREEZE_STEP_BLOCKS, FreezeOnGrowth
from rebalance_lab.protocol import codec
from tests.unit.coordinator.group_context import GroupContext


@pytest.fixture
def policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(connection, "FREEZE_AFTER_S", 60.0)  # only the growth rule, unless a test says otherwise
    gc.collect()
    gc.unfreeze()
    FreezeOnGrowth.install()  # perhaps installed already: a session-wide emulator of the plugin runs meanwhile
    FreezeOnGrowth._last = sys.getallocatedblocks()  # growth is counted from here, whatever ran before
    try:
        yield
    finally:
        FreezeOnGrowth.remove()
        gc.unfreeze()


def test_a_world_grown_by_a_step_is_frozen_before_a_full_collection_traverses_it(policy: None) -> None:
    assert gc.get_freeze_count() == 0
    world = [[str(i)] for i in range(2 * FREEZE_STEP_BLOCKS)]  # long-lived state made outside any big request
    gc.collect()  # the collector's own full collections, while it grew, may have frozen it already
    # In the permanent generation, where no full collection traverses it, but for less than a step's growth
    # (~3 blocks an entry: a list, its items, a string)
    assert gc.get_freeze_count() >= len(world) - FREEZE_STEP_BLOCKS // 2
    assert FreezeOnGrowth.freezes > 0 and sys.getallocatedblocks() < FreezeOnGrowth._last + FREEZE_STEP_BLOCKS


def test_a_small_growth_is_left_to_the_collector(policy: None) -> None:
    FreezeOnGrowth._last = sys.getallocatedblocks()
    state = [[i] for i in range(1_000)]
    gc.collect()
    assert gc.get_freeze_count() == 0 and state


def test_the_survivors_of_a_slow_full_collection_are_frozen(policy: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "FREEZE_AFTER_S", 0.0)
    FreezeOnGrowth._last = sys.getallocatedblocks()
    state = [[i] for i in range(1_000)]
    gc.collect()
    assert gc.get_freeze_count() >= len(state)


def test_the_policy_is_removed_with_the_last_server() -> None:
    already = FreezeOnGrowth._users > 0  # a server of another test (the plugin's session emulator) may still run
    FreezeOnGrowth.install()
    FreezeOnGrowth.install()
    FreezeOnGrowth.remove()
    assert FreezeOnGrowth._around_full_collection in gc.callbacks
    FreezeOnGrowth.remove()
    assert (FreezeOnGrowth._around_full_collection in gc.callbacks) == already


def test_the_classic_listing_is_read_as_each_group_is_reached() -> None:
    ctx = GroupContext()
    for group in ("a", "b", "c"):
        ctx.join(version=4, group=group)
    listing = ctx.coordinator.listing(ListGroupsInput((), ()))
    assert listing is not None
    count, groups = listing
    assert (count, next(groups).group_id) == (3, "a")
    ctx.delete("b")  # deleted after the listing began, before it was reached: not listed (no longer in the table)
    assert [g.group_id for g in groups] == ["c"]
    assert [g.group_id for g in ctx.list_groups().groups] == ["a", "c"]  # the one-call listing is unchanged


def test_the_classic_listing_honours_the_filters_and_is_none_while_loading() -> None:
    ctx = GroupContext()
    ctx.join(version=4, group="pending-only")
    listing = ctx.coordinator.listing(ListGroupsInput(("stable",), ()))
    assert listing is not None and list(listing[1]) == []
    listing = ctx.coordinator.listing(ListGroupsInput((), ("consumer",)))
    assert listing is not None and list(listing[1]) == []
    ctx.coordinator.set_loading(True)
    assert ctx.coordinator.listing(ListGroupsInput((), ())) is None


@pytest.mark.parametrize("count", [1, 2, 19_999, 20_000, 20_001, 20_002, 60_001])
def test_a_big_answer_framed_a_run_of_parts_at_a_time_is_the_same_bytes(count: int) -> None:
    parts = [b""] + [bytes([i % 251]) * (i % 4) for i in range(1, count)]
    expected = b"".join(parts[1:])
    framed = codec._framed(list(parts))
    assert (int.from_bytes(framed[:4], "big"), framed[4:]) == (len(expected), expected)
