"""The last big requests that held the loop in one step (issue 17, Fairness): OffsetDelete's deletion prepared in
steps and made by one swap, DeleteGroups' duplicate removal in steps, the KIP-848 listing read as reached.

benchmarks/loop_stalls.py measures the stalls (longest loop turn's CPU at 200,000 entries: DeleteGroups 107-127 ms
-> 14-15, OffsetDelete 67-98 -> 16-17); these tests show the mechanisms and that the answers are Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rebalance_lab.config import GroupConfig
from rebalance_lab.coordinator.handlers.base import RequestContext, Stepped
from rebalance_lab.coordinator.handlers.steps import STEP
from rebalance_lab.coordinator.offsets import CommittedOffset, OffsetStore
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.consumer.context import Ctx
from tests.unit.dataplane.harness import HANDLERS, decoded_request, make_world


def value(offset: int) -> CommittedOffset:
    return CommittedOffset(offset=offset, leader_epoch=-1, metadata="", commit_timestamp_ms=0, expire_timestamp_ms=None)


def _store(partitions: int = 12_000) -> OffsetStore:
    store = OffsetStore(GroupConfig())
    store.commit_all("g", {("t", p): value(p) for p in range(partitions)})
    store.commit_all("g", {("u", 0): value(7)})
    return store


def _run(steps: Iterator[None]) -> int:
    return sum(1 for _ in steps)


def _prepared(store: OffsetStore, keys: list[tuple[str, int]]) -> Any:
    steps = store.prepare_deletion("g", keys)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def test_a_prepared_deletion_deletes_nothing_until_it_is_made_then_everything_in_one_swap() -> None:
    store = _store()
    keys = [("t", p) for p in range(12_000)]
    steps = store.prepare_deletion("g", keys)
    assert _run(steps) >= 4  # 12,000 keys and 12,001 offsets: a few thousand a step
    assert len(store.fetch_all("g")) == 12_001  # another request between the steps sees every offset
    prepared = _prepared(store, keys)
    replaced = store.delete_prepared(prepared)
    assert store.fetch_all("g") == [(("u", 0), value(7))]
    # the group's former offsets are handed back whole, to be freed a slice at a time: the swap popped nothing
    assert replaced is not None and len(replaced) == 12_001


def test_a_prepared_deletion_of_every_offset_forgets_the_group() -> None:
    store = _store(10)
    store.delete_prepared(_prepared(store, [("t", p) for p in range(10)] + [("u", 0), ("v", 1)]))
    assert not store.has_offsets("g") and "g" not in store.group_ids()


def test_the_offsets_left_keep_their_commit_order() -> None:
    store = OffsetStore(GroupConfig())
    for key in [("b", 0), ("a", 1), ("b", 1), ("a", 0), ("c", 0)]:
        store.commit("g", *key, value(0))
    store.delete_prepared(_prepared(store, [("b", 1), ("a", 0)]))
    assert [key for key, _ in store.fetch_all("g")] == [("b", 0), ("a", 1), ("c", 0)]  # OffsetFetch's HashMap order


def test_a_commit_between_the_steps_is_kept_and_a_recommitted_doomed_offset_still_goes() -> None:
    store = _store(10)
    prepared = _prepared(store, [("t", p) for p in range(5)])
    store.commit("g", "t", 9, value(99))  # after the preparation began: the deletion is made key by key
    store.commit("g", "t", 0, value(42))  # Kafka writes the tombstone after this commit: it goes
    store.commit("g", "w", 0, value(1))
    assert store.delete_prepared(prepared) is None
    assert dict(store.fetch_all("g")) == {("t", 5): value(5), ("t", 6): value(6), ("t", 7): value(7),
                                          ("t", 8): value(8), ("t", 9): value(99), ("u", 0): value(7),
                                          ("w", 0): value(1)}


def test_spared_offsets_stay_in_place_and_a_listener_is_told_each_tombstone() -> None:
    store = _store(4)
    store.delete_prepared(_prepared(store, [("t", p) for p in range(4)]), spared={("t", 1), ("t", 2)})
    assert [key for key, _ in store.fetch_all("g")] == [("t", 1), ("t", 2), ("u", 0)]
    told: list[Any] = []
    store.listener = lambda group, key, val: told.append((group, key, val))
    store.delete_prepared(_prepared(store, [("t", 1), ("x", 0)]))
    assert told == [("g", ("t", 1), None)] and [key for key, _ in store.fetch_all("g")] == [("t", 2), ("u", 0)]


class _CountedNames(list[str]):
    """A request's group names that count how many were read, to see how many one step reads."""

    read = 0

    def __iter__(self) -> Iterator[str]:
        for name in super().__iter__():
            _CountedNames.read += 1
            yield name


def test_delete_groups_reads_a_big_requests_names_a_step_at_a_time_and_answers_each_once_in_order() -> None:
    world = make_world()
    request = decoded_request(42, 2, groups_names=[])
    names = [f"group-{i % 4_000}" for i in range(6_000)]  # 2,000 duplicates
    request.groups_names = _CountedNames(names)
    ctx = RequestContext(42, 2, 1, "test", "/127.0.0.1", 1, world.nodes[0], world)
    stepped = HANDLERS[42].handle(ctx, request)
    assert isinstance(stepped, Stepped)
    most, response = 0, None
    while response is None:
        before = _CountedNames.read
        try:
            next(stepped.steps)
        except StopIteration as done:
            response = done.value
        most = max(most, _CountedNames.read - before)
    assert most <= STEP * 10  # all 6,000 were read in the first step before (dict.fromkeys, 30-70 ms at 200,000)
    assert [r.group_id for r in response.results] == [f"group-{i}" for i in range(4_000)]
    assert {r.error_code for r in response.results} == {ErrorCode.GROUP_ID_NOT_FOUND}


def test_the_consumer_group_listing_is_read_as_each_group_is_reached() -> None:
    ctx = Ctx()
    for member, group in (("A", "a"), ("B", "b"), ("C", "c")):
        ctx.join(member, group=group)
    count, entries = ctx.coordinator.listing()
    assert (count, next(entries)) == (3, ("a", "Stable", "consumer"))
    ctx.leave("B", group="b")
    assert ctx.coordinator.delete_group(ctx.now, "b")[0] == ErrorCode.NONE  # deleted before it was reached
    ctx.leave("C", group="c")  # its state is read when it is reached
    assert list(entries) == [("c", "Empty", "consumer")]
    assert ctx.coordinator.list_entries() == [("a", "Stable", "consumer"), ("c", "Empty", "consumer")]
